package kit

import "testing"

// A Reading gives back what was kept under each key, the last value kept
// for a key, past its inline room as within it.
func TestReading(t *testing.T) {
	type key int
	var r Reading
	for i := range 2 * readingInline {
		r.Keep(key(i), i)
	}
	r.Keep(key(1), "again")
	r.Keep(key(readingInline+1), "again")
	for i := range 2 * readingInline {
		v, ok := r.Kept(key(i))
		want := any(i)
		if i == 1 || i == readingInline+1 {
			want = "again"
		}
		if !ok || v != want {
			t.Errorf("Kept(%d) = %v, %v; want %v", i, v, ok, want)
		}
	}
	if v, ok := r.Kept(key(-1)); ok {
		t.Errorf("Kept of a key never kept: %v", v)
	}
}
