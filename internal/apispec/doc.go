// Package apispec holds one test, and nothing a program imports: it checks
// api/openapi.yaml against both sides of the wire, the client's requests
// and every answer the sandbox gives. It is a module of its own so that
// the OpenAPI library it needs (kin-openapi) stays out of smsform's go.mod.
package apispec
