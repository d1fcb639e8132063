package window

// This file lets a Finder answer most numbers of the +1 plan by their area
// code: the phone-number library keeps the time zones of +1 numbers by
// prefix, and for most area codes the only prefix is the area code itself
// (+1 212: New York), so every number of it has the zones of the first one
// looked up. The others are split by exchange (+1 850: Pensacola in Central
// time, Tallahassee in Eastern) and are always asked of the library.

// splitAreaCodes are the +1 area codes under which the library's time zone
// data has a longer prefix than the area code. TestSplitAreaCodes derives
// them from that data (go test ./internal/window -run TestSplitAreaCodes
// -update rewrites this list after the library is updated).
var splitAreaCodes = [...]uint16{
	208, 219, 250, 270, 308, 310, 418, 423, 541, 574, 605, 606, 620, 701, 709, 775,
	785, 807, 812, 850, 867, 906, 907, 928,
}

// wholeArea is, by area code, whether every number of it has the same
// zones. Immutable once made.
var wholeArea = func() (w [1000]bool) {
	for i := range w {
		w[i] = true
	}
	for _, npa := range splitAreaCodes {
		w[npa] = false
	}
	return w
}()

// areaOf returns the area code of a +1 number written in E.164 ("+1212…"),
// or false for any other number.
func areaOf(e164 string) (int, bool) {
	if len(e164) < 5 || e164[0] != '+' || e164[1] != '1' {
		return 0, false
	}
	npa := 0
	for _, c := range e164[2:5] {
		if c < '0' || c > '9' {
			return 0, false
		}
		npa = npa*10 + int(c-'0')
	}
	return npa, true
}
