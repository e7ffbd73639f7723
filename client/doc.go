// Package client is the Go client of the service's HTTP API (package
// httpapi): the calls the flotilla command makes, for a control plane to
// make the same way. Refusals are *Error values classified by errors.Is
// (ErrBadRequest, ErrForbidden, ...), with the service's problems by field
// and value.
//
// A client may be given several servers of one service (New's
// comma-separated list, the processes of a highly available serve): it
// moves to the next when one cannot be reached, so a killed server does
// not stop it.
package client
