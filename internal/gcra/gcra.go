// Package gcra counts attempts with the generic cell rate algorithm: one
// time per key, the "theoretical arrival time" of the next attempt. An
// allowance of burst attempts refills at one per every.
package gcra

import (
	"strings"
	"sync"
	"time"
)

// Wait is how long an attempt must wait, given the theoretical arrival
// time tat of the next one (zero: none recorded): burst attempts fit in
// the window before it, and the next waits until there is room.
func Wait(tat time.Time, burst int, every time.Duration, now time.Time) time.Duration {
	if tat.IsZero() {
		return 0
	}
	return max(0, tat.Sub(now)-time.Duration(burst-1)*every)
}

// take is the algorithm's step for one attempt at now, given the recorded
// time tat (zero: none): the wait, and if it is zero, the new time to
// record.
func take(tat time.Time, burst int, every time.Duration, now time.Time) (time.Duration, time.Time) {
	if wait := Wait(tat, burst, every, now); wait > 0 {
		return wait, tat
	}
	if tat.Before(now) {
		tat = now
	}
	return 0, tat.Add(every)
}

// Table keeps the times of keys in memory. Keys are kept per kind (the
// part of the key before its first colon), each kind bounded on its own
// and ordered by time, so that the cheapest requests cannot crowd out the
// keys of sign-in failures, and a full kind makes room in O(log n). It is
// safe for concurrent use.
type Table struct {
	mu      sync.Mutex
	kinds   map[string]*kind
	maxKeys int
}

// kind holds the keys of one kind: a map and a min-heap by time.
type kind struct {
	entries map[string]*entry
	heap    []*entry
}

type entry struct {
	key   string
	tat   time.Time
	index int
}

// NewTable returns a Table of at most maxKeys keys of each kind. Keys
// whose allowance has refilled are dropped as time passes. When a kind is
// full of keys still counting, the one closest to refilling is dropped to
// make room.
func NewTable(maxKeys int) *Table {
	return &Table{kinds: make(map[string]*kind), maxKeys: maxKeys}
}

// kindOf returns the kind of key, creating it if need be, with the keys
// that have refilled at now dropped. Called under mu.
func (t *Table) kindOf(key string, now time.Time) *kind {
	name, _, _ := strings.Cut(key, ":")
	k := t.kinds[name]
	if k == nil {
		k = &kind{entries: make(map[string]*entry)}
		t.kinds[name] = k
	}
	for len(k.heap) > 0 && !k.heap[0].tat.After(now) {
		k.remove(k.heap[0])
	}
	return k
}

// Take spends one attempt of key's allowance at now, if one is left, and
// returns zero. If none is left it spends nothing and returns how long
// until one is.
func (t *Table) Take(key string, burst int, every time.Duration, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.kindOf(key, now)
	e := k.entries[key]
	var tat time.Time
	if e != nil {
		tat = e.tat
	}
	wait, next := take(tat, burst, every, now)
	if wait > 0 {
		return wait
	}
	if e != nil {
		e.tat = next
		k.fix(e.index)
		return 0
	}
	if len(k.heap) >= t.maxKeys {
		k.remove(k.heap[0])
	}
	k.push(&entry{key: key, tat: next})
	return 0
}

// Refund gives back one attempt that Take spent on key.
func (t *Table) Refund(key string, every time.Duration, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.kindOf(key, now)
	e := k.entries[key]
	if e == nil {
		return
	}
	if e.tat = e.tat.Add(-every); e.tat.After(now) {
		k.fix(e.index)
	} else {
		k.remove(e)
	}
}

// Reset forgets key's attempts.
func (t *Table) Reset(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	name, _, _ := strings.Cut(key, ":")
	if k := t.kinds[name]; k != nil {
		if e := k.entries[key]; e != nil {
			k.remove(e)
		}
	}
}

func (k *kind) push(e *entry) {
	k.entries[e.key] = e
	e.index = len(k.heap)
	k.heap = append(k.heap, e)
	k.up(e.index)
}

func (k *kind) remove(e *entry) {
	delete(k.entries, e.key)
	i, last := e.index, len(k.heap)-1
	if i != last {
		k.swap(i, last)
	}
	k.heap[last] = nil
	k.heap = k.heap[:last]
	if i != last {
		k.fix(i)
	}
}

// fix restores the heap order after the time at i changed.
func (k *kind) fix(i int) {
	if !k.down(i) {
		k.up(i)
	}
}

func (k *kind) less(i, j int) bool { return k.heap[i].tat.Before(k.heap[j].tat) }

func (k *kind) swap(i, j int) {
	k.heap[i], k.heap[j] = k.heap[j], k.heap[i]
	k.heap[i].index, k.heap[j].index = i, j
}

func (k *kind) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !k.less(i, p) {
			return
		}
		k.swap(i, p)
		i = p
	}
}

// down moves the entry at i down to its place and reports whether it
// moved.
func (k *kind) down(i int) bool {
	start := i
	for {
		c := 2*i + 1
		if c >= len(k.heap) {
			break
		}
		if r := c + 1; r < len(k.heap) && k.less(r, c) {
			c = r
		}
		if !k.less(c, i) {
			break
		}
		k.swap(i, c)
		i = c
	}
	return i > start
}
