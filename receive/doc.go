// Package receive takes what a provider says after the send — delivery
// reports and the replies recipients send back — and records it in a
// project's state: as a webhook server ([Server], what `smsform receive`
// runs) and from an export file ([Import], what `smsform reports import`
// runs). Both read through the project file's mappings
// ([mapping.Reports], [mapping.Replies]) and write through a [Recorder]
// (the state's [state.Receiver]).
//
// The server's contract, which a provider's retries rest on:
//
//   - A post is authenticated before anything of it is read as a report:
//     the HMAC-SHA256 of the raw body compared with [hmac.Equal], or the
//     secret as a Basic password, a bearer token or a query token
//     compared in constant time. Without valid authentication: 401, and
//     nothing is recorded.
//   - A body is bounded ([mapping.MaxBody], [mapping.MaxBodyElements]):
//     past it, 413. A body the mapping cannot read whole: 400. Either way
//     nothing of it is recorded.
//   - A 2xx is answered only once [Recorder.Record] returned nil: what
//     was acknowledged is durable. When recording fails the answer is 503,
//     and the provider posts it again.
//   - The same report posted twice is recorded once (the Recorder knows
//     it) and answered 2xx again, so a retry never counts twice.
//   - Stopping ([Server.Serve]'s context cancelled, as SIGTERM does)
//     finishes the requests in hand with http.Server.Shutdown.
//
// Several servers may share one PostgreSQL state behind a load balancer:
// each request is recorded on its own, so they have nothing of their own
// to coordinate. The log has one line per request and never holds a
// phone number, a body, a signature or the secret.
package receive
