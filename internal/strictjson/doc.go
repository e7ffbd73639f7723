// Package strictjson decodes JSON documents written by people strictly:
// unknown keys (matched case-sensitively), repeated keys, wrong types and
// out-of-range numbers are all reported at once, each as a
// *flotilla.FieldError with the JSON path of the offending value. Decoding
// goes on around such problems (a bad value reads as absent), so a caller
// can validate the rest and report everything together with Merge; only a
// problem with the document as a whole (syntax, empty input, trailing data,
// a top level that is not an object) stops it, which Fatal reports. The
// scenario files of `flotilla schedule` and the jobs file of
// `flotilla priority` use it.
package strictjson
