// Package client is the Go client of the service's HTTP API (package
// httpapi): the calls the flotilla command makes, for a control plane to
// make the same way. Refusals are *Error values classified by errors.Is
// (ErrBadRequest, ErrForbidden, ...), with the service's problems by field
// and value.
package client
