package memgraph

import "slices"

// chunkMax is the most elements one chunk holds. A change to a list moves
// at most one chunk's elements (a few KiB), however long the list: a user
// with millions of followers costs the same per follow as anyone else.
const chunkMax = 512

// chunks is a sorted sequence split into chunks of at most chunkMax
// elements. The order is the caller's: every method that needs it takes a
// less function. The zero value is an empty sequence.
//
// Most lists fit in one chunk, held in one; longer ones move to many.
// Keeping the single chunk inline saves an allocation and a pointer chase
// for most users, at the same 32 bytes of header.
type chunks[E any] struct {
	one  []E
	many *multi[E]
}

type multi[E any] struct {
	c [][]E
	n int
}

// pos is a position in a chunks: chunk index and offset within it. The end
// is {count(), 0}.
type pos struct{ c, i int }

func (s *chunks[E]) len() int {
	if s.many != nil {
		return s.many.n
	}
	return len(s.one)
}

// count returns the number of chunks.
func (s *chunks[E]) count() int {
	switch {
	case s.many != nil:
		return len(s.many.c)
	case len(s.one) > 0:
		return 1
	}
	return 0
}

func (s *chunks[E]) chunk(c int) []E {
	if s.many != nil {
		return s.many.c[c]
	}
	return s.one
}

func (s *chunks[E]) setChunk(c int, ch []E) {
	if s.many != nil {
		s.many.c[c] = ch
	} else {
		s.one = ch
	}
}

func (s *chunks[E]) end() pos         { return pos{s.count(), 0} }
func (s *chunks[E]) isEnd(p pos) bool { return p.c >= s.count() }
func (s *chunks[E]) at(p pos) E       { return s.chunk(p.c)[p.i] }

// search returns the first position whose element is not less than the
// target, where less(e) reports whether e is less than the target; the end
// if there is none. It calls less O(log n) times.
func (s *chunks[E]) search(less func(E) bool) pos {
	lo, hi := 0, s.count()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		ch := s.chunk(m)
		if less(ch[len(ch)-1]) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == s.count() {
		return s.end()
	}
	ch := s.chunk(lo)
	i, j := 0, len(ch)-1 // the last element is known not to be less
	for i < j {
		m := int(uint(i+j) >> 1)
		if less(ch[m]) {
			i = m + 1
		} else {
			j = m
		}
	}
	return pos{lo, i}
}

// last returns the greatest element.
func (s *chunks[E]) last() (e E, ok bool) {
	n := s.count()
	if n == 0 {
		return e, false
	}
	ch := s.chunk(n - 1)
	return ch[len(ch)-1], true
}

// insert puts e at p, which must keep the sequence sorted.
func (s *chunks[E]) insert(p pos, e E) {
	n := s.count()
	if n == 0 {
		s.one = []E{e}
		return
	}
	if p.c == n { // the end: the end of the last chunk
		p = pos{n - 1, len(s.chunk(n - 1))}
	}
	if s.many != nil {
		s.many.n++
	}
	ch := s.chunk(p.c)
	if len(ch) < chunkMax {
		s.setChunk(p.c, insertAt(ch, p.i, e))
		return
	}
	if s.many == nil {
		s.many = &multi[E]{c: [][]E{s.one}, n: len(s.one) + 1}
		s.one = nil
	}
	if p.c == n-1 && p.i == len(ch) {
		// Appending past a full last chunk, the usual case of a new
		// follow: start a new chunk and leave the full one full.
		s.many.c = append(s.many.c, []E{e})
		return
	}
	half := len(ch) / 2
	left, right := slices.Clone(ch[:half]), slices.Clone(ch[half:])
	if p.i <= half {
		left = insertAt(left, p.i, e)
	} else {
		right = insertAt(right, p.i-half, e)
	}
	s.many.c[p.c] = left
	s.many.c = slices.Insert(s.many.c, p.c+1, right)
}

// remove deletes the element at p. A chunk that becomes small is merged
// with its successor so chunks stay at least a quarter full on average.
func (s *chunks[E]) remove(p pos) {
	ch := slices.Delete(s.chunk(p.c), p.i, p.i+1)
	if len(ch) < cap(ch)/2 {
		ch = slices.Clone(ch) // give back what unfollows freed
	}
	if s.many == nil {
		s.one = ch
		if len(ch) == 0 {
			s.one = nil
		}
		return
	}
	m := s.many
	m.n--
	switch {
	case len(ch) == 0:
		m.c = slices.Delete(m.c, p.c, p.c+1)
	case len(ch) < chunkMax/4 && p.c+1 < len(m.c) && len(ch)+len(m.c[p.c+1]) <= chunkMax/2:
		m.c[p.c] = slices.Concat(ch, m.c[p.c+1])
		m.c = slices.Delete(m.c, p.c+1, p.c+2)
	default:
		m.c[p.c] = ch
	}
	if len(m.c) == 1 {
		s.one, s.many = m.c[0], nil
	}
}

// insertAt inserts e at i, growing a full chunk by an eighth rather than
// doubling it: memory, not copying, is what a graph of billions of edges
// runs out of, and a chunk is at most a few KiB to copy.
func insertAt[E any](ch []E, i int, e E) []E {
	if len(ch) == cap(ch) {
		grown := make([]E, len(ch), len(ch)+max(2, len(ch)/8))
		copy(grown, ch)
		ch = grown
	}
	return slices.Insert(ch, i, e)
}

// descend calls yield for the elements before p, greatest first, until
// yield returns false.
func (s *chunks[E]) descend(p pos, yield func(E) bool) {
	c, i := p.c, p.i
	if n := s.count(); c >= n {
		c, i = n-1, -1
	}
	for ; c >= 0; c, i = c-1, -1 {
		ch := s.chunk(c)
		if i < 0 {
			i = len(ch)
		}
		for i--; i >= 0; i-- {
			if !yield(ch[i]) {
				return
			}
		}
	}
}

// each calls yield for every element in order until yield returns false.
func (s *chunks[E]) each(yield func(E) bool) {
	for c := range s.count() {
		for _, e := range s.chunk(c) {
			if !yield(e) {
				return
			}
		}
	}
}

// fill replaces the contents with sorted, which is copied into full chunks
// of exactly the size needed.
func (s *chunks[E]) fill(sorted []E) {
	s.one, s.many = nil, nil
	if len(sorted) <= chunkMax {
		s.one = slices.Clip(slices.Clone(sorted))
		if len(sorted) == 0 {
			s.one = nil
		}
		return
	}
	s.many = &multi[E]{c: make([][]E, 0, (len(sorted)+chunkMax-1)/chunkMax), n: len(sorted)}
	for len(sorted) > 0 {
		k := min(len(sorted), chunkMax)
		s.many.c = append(s.many.c, slices.Clone(sorted[:k]))
		sorted = sorted[k:]
	}
}
