// The OpenAPI conformance test lives in a module of its own: kin-openapi is
// a test tool, not a dependency of smsform, so it stays out of smsform's
// go.mod. make test and .ci/run run it too.
module github.com/smsform/smsform/internal/apispec

go 1.26.8

require github.com/smsform/smsform v0.0.0

require (
	github.com/shopspring/decimal v1.6.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
)

require (
	github.com/getkin/kin-openapi v0.152.0
	github.com/go-openapi/jsonpointer v0.22.5 // indirect
	github.com/go-openapi/swag/jsonname v0.25.5 // indirect
	github.com/kr/pretty v0.3.1 // indirect
	github.com/nyaruka/phonenumbers v1.8.1 // indirect
	github.com/oasdiff/yaml v0.1.1 // indirect
	github.com/oasdiff/yaml3 v0.0.14 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)

replace github.com/smsform/smsform => ../..
