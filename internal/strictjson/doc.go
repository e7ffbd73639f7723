// Package strictjson decodes JSON documents written by people strictly:
// unknown keys (matched case-sensitively), repeated keys, wrong types and
// out-of-range numbers are all reported at once, each as a
// *flotilla.FieldError with the JSON path of the offending value, before
// anything is decoded. The scenario files of `flotilla schedule` and the
// bank-tree, weights and jobs files of `flotilla priority` use it.
package strictjson
