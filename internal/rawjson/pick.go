package rawjson

// Picker finds the values a few pointers name in a JSON text in one walk of
// its bytes: what [Pointer.Lookup] of each pointer gives (a key written
// twice names its last value), where a lookup per pointer would walk the
// text once for each, and each time again through the members before the
// one it wants. A results list of a thousand elements is read this way.
type Picker struct{ root pickNode }

// pickNode is a point that pointers pass through: the pointers that end
// there (their indexes) and the tokens they go on with.
type pickNode struct {
	tok  string
	idx  int // tok as an array index; -1 when it is none
	ends []int
	kids []*pickNode
}

// NewPicker makes a Picker of ps; found[i] of pick is what ps[i] names.
func NewPicker(ps ...Pointer) *Picker {
	pk := &Picker{}
	for i, p := range ps {
		n := &pk.root
		for _, tok := range p.tokens {
			n = n.kid(tok)
		}
		n.ends = append(n.ends, i)
	}
	return pk
}

// kid is n's child of token tok, made when there is none yet.
func (n *pickNode) kid(tok string) *pickNode {
	for _, k := range n.kids {
		if k.tok == tok {
			return k
		}
	}
	idx, ok := arrayIndex(tok)
	if !ok {
		idx = -1
	}
	k := &pickNode{tok: tok, idx: idx}
	n.kids = append(n.kids, k)
	return k
}

// pick walks the JSON value that starts at doc[i] (valid JSON, no space
// before it) and returns the index just past it and the space after it.
// found (one entry per pointer) gets what each pointer names in it, nil
// when it names nothing.
func (pk *Picker) Pick(doc []byte, i int, found [][]byte) int {
	return pk.member(doc, i, &pk.root, found)
}

// walk is pick of the value at b[i] under node n: the pointers through n
// that go on are followed into it.
func (pk *Picker) walk(b []byte, i int, n *pickNode, found [][]byte) int {
	if len(n.kids) == 0 || i >= len(b) {
		return SkipValue(b, i)
	}
	switch b[i] {
	case '{':
		i = SkipSpace(b, i+1)
		for i < len(b) && b[i] == '"' {
			kend := SkipValue(b, i)
			var kid *pickNode
			for _, k := range n.kids {
				if KeyIs(b[i:kend], k.tok) {
					kid = k
					break
				}
			}
			i = SkipSpace(b, SkipSpace(b, kend)+1) // past the colon
			i = pk.member(b, i, kid, found)
			if i < len(b) && b[i] == ',' {
				i = SkipSpace(b, i+1)
			}
		}
		return i + 1 // past the }
	case '[':
		i = SkipSpace(b, i+1)
		for k := 0; i < len(b) && b[i] != ']'; k++ {
			var kid *pickNode
			for _, c := range n.kids {
				if c.idx == k {
					kid = c
					break
				}
			}
			i = pk.member(b, i, kid, found)
			if i < len(b) && b[i] == ',' {
				i = SkipSpace(b, i+1)
			}
		}
		return i + 1 // past the ]
	}
	return SkipValue(b, i)
}

// member walks the value at b[i] of a member or element that kid (nil: no
// pointer) names, and returns the index of what follows it. A member
// written again replaces what an earlier one of the same name gave.
func (pk *Picker) member(b []byte, i int, kid *pickNode, found [][]byte) int {
	if kid == nil {
		return SkipSpace(b, SkipValue(b, i))
	}
	kid.forget(found)
	end := pk.walk(b, i, kid, found)
	for _, e := range kid.ends {
		found[e] = b[i:end]
	}
	return SkipSpace(b, end)
}

// forget clears what the pointers through n found.
func (n *pickNode) forget(found [][]byte) {
	for _, e := range n.ends {
		found[e] = nil
	}
	for _, k := range n.kids {
		k.forget(found)
	}
}
