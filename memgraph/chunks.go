package memgraph

import "slices"

// chunkMax is the most elements one chunk holds. A change to a list moves
// at most one chunk's elements (a few KiB), however long the list: a user
// with millions of followers costs the same per follow as anyone else.
const chunkMax = 512

// chunks is a sorted sequence split into chunks of at most chunkMax
// elements. The order is the caller's: every method that needs it takes a
// less function. The zero value is an empty sequence.
type chunks[E any] struct {
	c [][]E
	n int
}

// pos is a position in a chunks: chunk index and offset within it. The end
// is {len(c), 0}.
type pos struct{ c, i int }

func (s *chunks[E]) len() int         { return s.n }
func (s *chunks[E]) end() pos         { return pos{len(s.c), 0} }
func (s *chunks[E]) at(p pos) E       { return s.c[p.c][p.i] }
func (s *chunks[E]) isEnd(p pos) bool { return p.c >= len(s.c) }

// search returns the first position whose element is not less than the
// target, where less(e) reports whether e is less than the target; the end
// if there is none. It calls less O(log n) times.
func (s *chunks[E]) search(less func(E) bool) pos {
	lo, hi := 0, len(s.c)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		ch := s.c[m]
		if less(ch[len(ch)-1]) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(s.c) {
		return s.end()
	}
	ch := s.c[lo]
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
	if s.n == 0 {
		return e, false
	}
	ch := s.c[len(s.c)-1]
	return ch[len(ch)-1], true
}

// insert puts e at p, which must keep the sequence sorted.
func (s *chunks[E]) insert(p pos, e E) {
	s.n++
	if len(s.c) == 0 {
		s.c = [][]E{{e}}
		return
	}
	if p.c == len(s.c) { // the end: the end of the last chunk
		p = pos{len(s.c) - 1, len(s.c[len(s.c)-1])}
	}
	ch := s.c[p.c]
	if len(ch) < chunkMax {
		s.c[p.c] = slices.Insert(ch, p.i, e)
		return
	}
	if p.c == len(s.c)-1 && p.i == len(ch) {
		// Appending past a full last chunk, the usual case of a new
		// follow: start a new chunk and leave the full one full.
		s.c = append(s.c, []E{e})
		return
	}
	half := len(ch) / 2
	right := make([]E, len(ch)-half, chunkMax)
	copy(right, ch[half:])
	left := ch[:half]
	if p.i <= half {
		left = slices.Insert(left, p.i, e)
	} else {
		right = slices.Insert(right, p.i-half, e)
	}
	s.c[p.c] = left
	s.c = slices.Insert(s.c, p.c+1, right)
}

// remove deletes the element at p. A chunk that becomes small is merged
// with its successor so chunks stay at least a quarter full on average.
func (s *chunks[E]) remove(p pos) {
	s.n--
	ch := slices.Delete(s.c[p.c], p.i, p.i+1)
	switch {
	case len(ch) == 0:
		s.c = slices.Delete(s.c, p.c, p.c+1)
		if len(s.c) == 0 {
			s.c = nil
		}
		return
	case len(ch) < chunkMax/4 && p.c+1 < len(s.c) && len(ch)+len(s.c[p.c+1]) <= chunkMax/2:
		ch = append(ch, s.c[p.c+1]...)
		s.c = slices.Delete(s.c, p.c+1, p.c+2)
	}
	s.c[p.c] = ch
}

// descend calls yield for the elements before p, greatest first, until
// yield returns false.
func (s *chunks[E]) descend(p pos, yield func(E) bool) {
	c, i := p.c, p.i
	if c >= len(s.c) {
		c, i = len(s.c)-1, -1
		if c < 0 {
			return
		}
		i = len(s.c[c])
	}
	for ; c >= 0; c-- {
		ch := s.c[c]
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
	for _, ch := range s.c {
		for _, e := range ch {
			if !yield(e) {
				return
			}
		}
	}
}

// fill replaces the contents with sorted, which is copied into full chunks
// of exactly the size needed.
func (s *chunks[E]) fill(sorted []E) {
	s.n = len(sorted)
	s.c = nil
	if len(sorted) == 0 {
		return
	}
	s.c = make([][]E, 0, (len(sorted)+chunkMax-1)/chunkMax)
	for len(sorted) > 0 {
		k := min(len(sorted), chunkMax)
		s.c = append(s.c, slices.Clone(sorted[:k]))
		sorted = sorted[k:]
	}
}
