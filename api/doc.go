// Package api holds the JSON bodies of the service's HTTP API, shared by
// the handler (package httpapi) and the Go client (package client), and
// their conversions to and from the server package's types.
package api
