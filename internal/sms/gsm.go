package sms

// asciiSeptets is the cost in septets of each ASCII character in GSM-7: 1 in
// the default alphabet, 2 in the extension table (escape + character), 0 when
// it is not in GSM-7 at all (control characters other than LF, CR and form
// feed, backquote, DEL).
var asciiSeptets = func() (t [128]uint8) {
	const basic = "\n\r !\"#$%&'()*+,-./0123456789:;<=>?@" +
		"ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"
	for i := 0; i < len(basic); i++ {
		t[basic[i]] = 1
	}
	const ext = "\f^{}\\[~]|"
	for i := 0; i < len(ext); i++ {
		t[ext[i]] = 2
	}
	return t
}()

// nonASCIISeptets is the cost in septets of a non-ASCII rune in GSM-7, 0 when
// it is not in GSM-7.
func nonASCIISeptets(r rune) int {
	switch r {
	case '£', '¥', 'è', 'é', 'ù', 'ì', 'ò', 'Ç', 'Ø', 'ø', 'Å', 'å',
		'Δ', 'Φ', 'Γ', 'Λ', 'Ω', 'Π', 'Ψ', 'Σ', 'Θ', 'Ξ', 'Æ', 'æ', 'ß', 'É',
		'¤', '¡', 'Ä', 'Ö', 'Ñ', 'Ü', '§', '¿', 'ä', 'ö', 'ñ', 'ü', 'à':
		return 1
	case '€':
		return 2
	}
	return 0
}
