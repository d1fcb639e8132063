// Package schemacheck holds one test: the JSON Schemas in schema/ and the
// campaign loader must agree, valid or invalid, on every example campaign
// and on a corpus of invalid files. It is a module of its own so that the
// JSON Schema validator stays out of smsform's go.mod; make test and
// .ci/run run it too.
package schemacheck
