package testharness

import "fmt"

// sandboxMapping is the provider: and receive: blocks of a project whose
// campaigns go through the sandbox's default answer and whose delivery
// reports and replies the sandbox posts to smsform receive: the mapping
// docs/sandbox.md gives and examples/delivery/smsform.yaml (what make demo
// uses) holds, which TestSandboxProjectIsTheDocs keeps the same.
const sandboxMapping = `provider:
  results:
    list: /messages
    number: /to
    id: /message_id
    outcome: sent
  reports:
    id: /message_id
    number: /to
    status: /status
    reason: /reason
    at: /at
    delivered: [DELIVERED]
    undelivered: [UNDELIVERED]
  replies:
    number: /from
    text: /text
    at: /at
receive:
  auth: hmac-sha256
  header: X-Smsform-Signature
`

// SandboxProject is the text of such a project file, its state at state
// (a folder, a file or a PostgreSQL URL).
func SandboxProject(state string) string {
	return fmt.Sprintf("version: 1\nstate: %q\n", state) + sandboxMapping
}
