// Package rawjson reads JSON text without decoding it: JSON pointers
// (RFC 6901, [Pointer]) parsed once when a configuration loads and looked
// up over the text, a [Picker] that finds several pointers' values in one
// walk, and the scanning those are made of (elements, members, strings,
// skipping a value), plus the plain string arrays the state keeps.
//
// It is the one place smsform scans JSON by hand. Every function takes
// valid JSON (checked by the caller with [encoding/json.Valid] or written
// by smsform itself) and answers as encoding/json would over the same text:
// a key written twice names its last value, a number is kept as written (a
// 20-digit id is never rounded through float64), and "absent" and "null"
// are different answers. The fuzz targets hold Lookup and the Picker to a
// decoded reference.
package rawjson
