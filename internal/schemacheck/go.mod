// The schema check lives in a module of its own: the JSON Schema validator
// is a test tool, not a dependency of smsform, so it stays out of smsform's
// go.mod. make test and .ci/run run it too.
module github.com/smsform/smsform/internal/schemacheck

go 1.26.8

require (
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	github.com/smsform/smsform v0.0.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/nyaruka/phonenumbers v1.8.1 // indirect
	github.com/shopspring/decimal v1.6.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)

replace github.com/smsform/smsform => ../..
