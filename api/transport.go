package api

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"strings"
	"syscall"
)

// Trouble is why a request could not reach the provider at all, when the
// transport tells: what a person must fix before anything can be sent.
type Trouble int

const (
	// TroubleNone: no such trouble known (a timeout, a dropped connection,
	// an answer).
	TroubleNone Trouble = iota
	// TroubleCertificate: the provider's TLS certificate could not be
	// verified. Trying again changes nothing.
	TroubleCertificate
	// TroubleRefused: nothing listens at the host and port.
	TroubleRefused
	// TroubleDNS: the host name could not be resolved.
	TroubleDNS
	// TroublePlainHTTP: the server answered plain HTTP to an HTTPS
	// request (the base URL's scheme or port is wrong).
	TroublePlainHTTP
)

// Certificate reports whether the provider's TLS certificate could not be
// verified: a request that is never retried (it cannot work until this
// machine trusts the certificate's authority).
func (e *Error) Certificate() bool { return e.Trouble == TroubleCertificate }

// Unreachable reports whether nothing could be asked at the base URL: the
// connection was refused, the host name did not resolve, the server spoke
// plain HTTP to an HTTPS request, or its certificate was not trusted. On
// the first contact of a run, that is a base URL (or a network) to fix,
// not a provider that will answer later.
func (e *Error) Unreachable() bool { return e.Trouble != TroubleNone }

// TooLarge reports whether the provider refused the request as too large
// (413: too many recipients, or too many bytes). It did not act on it.
func (e *Error) TooLarge() bool { return e.Status == http.StatusRequestEntityTooLarge }

// transportError is a call that got no response: before the request was
// fully written the API cannot have acted; after, it may have.
func transportError(op, host string, err error, wrote bool) *Error {
	e := &Error{Op: op, Err: err, Reached: wrote, Host: host}
	if !wrote {
		e.Trouble = troubleOf(err)
	}
	switch {
	case wrote:
		e.Message = "no response after the request was sent"
	case e.Trouble == TroubleCertificate:
		e.Message = "request not sent: the TLS certificate of " + host + " could not be verified"
	case e.Trouble == TroubleRefused:
		e.Message = "request not sent: the connection to " + host + " was refused"
	case e.Trouble == TroubleDNS:
		e.Message = "request not sent: the host name of " + host + " could not be resolved"
	case e.Trouble == TroublePlainHTTP:
		e.Message = "request not sent: " + host + " answered in plain HTTP to an HTTPS request"
	default:
		e.Message = "request not sent"
	}
	return e
}

// troubleOf tells why a connection could not be made, from what the
// transport returned.
func troubleOf(err error) Trouble {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		dns      *net.DNSError
		record   tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid):
		return TroubleCertificate
	case errors.Is(err, syscall.ECONNREFUSED):
		return TroubleRefused
	case errors.As(err, &dns):
		return TroubleDNS
	case errors.As(err, &record), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		// net/http replaces the TLS record error with words of its own.
		return TroublePlainHTTP
	}
	return TroubleNone
}
