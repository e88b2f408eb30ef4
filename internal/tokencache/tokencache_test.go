package tokencache

import (
	"strings"
	"testing"
	"time"
)

var now = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// An entry is found by its hash but given only for the very token it was
// put with: a hash collision is a miss, never another token's value.
func TestTokensWholeTokenMatches(t *testing.T) {
	var c Tokens[*int]
	v := new(int)
	h := c.Hash("token-a")
	if h == c.Hash("token-b") {
		t.Fatal("two tokens hash alike")
	}
	c.Put(h, "token-a", now.Add(time.Hour), v, now)
	for tok, want := range map[string]bool{"token-a": true, "token-b": false, "token-": false, "token-aa": false} {
		if got, ok := c.Get(h, tok); ok != want || (got == v) != want {
			t.Errorf("Get(h of token-a, %q) = %v, %v; want found %v", tok, got, ok, want)
		}
	}
	c.Remove(h)
	if _, ok := c.Get(h, "token-a"); ok {
		t.Error("found after Remove")
	}
}

// A full shard makes room by dropping the entries no longer usable, and
// empties itself only if that is not enough.
func TestTokensBound(t *testing.T) {
	var c Tokens[int]
	hashOf := func(i int) uint64 { return uint64(i) * shards } // all in one shard
	for i := range maxShardTokens {
		until := now.Add(time.Hour)
		if i%2 == 0 {
			until = now
		}
		c.Put(hashOf(i), "t", until, i, now)
	}
	c.Put(hashOf(maxShardTokens), "t", now.Add(time.Hour), maxShardTokens, now)
	for _, i := range []int{0, 1, maxShardTokens - 1, maxShardTokens} {
		_, ok := c.Get(hashOf(i), "t")
		if want := i%2 == 1 || i == maxShardTokens; ok != want {
			t.Errorf("entry %d after the shard filled: kept %v, want %v", i, ok, want)
		}
	}

	for i := range 2 * maxShardTokens {
		c.Put(hashOf(i), "t", now.Add(time.Hour), i, now)
	}
	if n := len(c.shards[0].m); n > maxShardTokens {
		t.Errorf("a shard holds %d entries; want at most %d", n, maxShardTokens)
	}
	if _, ok := c.Get(hashOf(2*maxShardTokens-1), "t"); !ok {
		t.Error("the newest entry is not kept")
	}
}

// A check that began before an eviction does not put the session back.
func TestSessionsEvictionWins(t *testing.T) {
	var c Sessions
	if ok, _ := c.Has("s1", now); ok {
		t.Fatal("an unknown session is trusted")
	}
	_, mark := c.Has("s1", now)
	c.Add("s1", now.Add(time.Minute), mark)
	if ok, _ := c.Has("s1", now); !ok {
		t.Fatal("not trusted after Add")
	}
	if ok, _ := c.Has("s1", now.Add(time.Minute)); ok {
		t.Error("trusted past its time")
	}

	_, mark = c.Has("s2", now)
	c.Evict("s1")
	c.Add("s2", now.Add(time.Minute), mark)
	if ok, _ := c.Has("s1", now); ok {
		t.Error("an evicted session is trusted")
	}
	if ok, _ := c.Has("s2", now); ok {
		t.Error("a check that began before an eviction added its session")
	}
}

func TestEnded(t *testing.T) {
	var d Ended
	if d.Has("u1", now) {
		t.Fatal("a user deleted nowhere is deleted")
	}
	d.Add("u1", now, now.Add(time.Hour))
	if !d.Has("u1", now.Add(time.Hour-time.Nanosecond)) || d.Has("u2", now) {
		t.Error("Has does not answer for exactly the deleted user")
	}
	if d.Has("u1", now.Add(time.Hour)) {
		t.Error("remembered after its tokens expired")
	}
	d.Add("u2", now.Add(time.Hour), now.Add(2*time.Hour))
	if len(d.until) != 1 || d.n.Load() != 1 {
		t.Errorf("remembers %d users (count %d); want the expired one forgotten", len(d.until), d.n.Load())
	}
}

// TestEqualConstantTime: the word-at-a-time compare finds a difference in
// any byte, in the words and in the tail, at every length.
func TestEqualConstantTime(t *testing.T) {
	for n := 0; n <= 40; n++ {
		x := strings.Repeat("a", n)
		if !equalConstantTime(x, strings.Clone(x)) {
			t.Errorf("length %d: equal strings compared unequal", n)
		}
		if n > 0 && equalConstantTime(x, x[:n-1]) {
			t.Errorf("length %d: a prefix compared equal", n)
		}
		for i := range n {
			y := []byte(x)
			y[i] ^= 0x80
			if equalConstantTime(x, string(y)) {
				t.Errorf("length %d: a difference at byte %d went unseen", n, i)
			}
		}
	}
}

// A token is found by its signature's hash, so a token that keeps the
// signature and changes the rest hashes alike; it is still a miss, as
// the whole token is compared.
func TestTokensSameSignature(t *testing.T) {
	var c Tokens[*int]
	genuine, forged := "head.payload.sig", "head.other-payload.sig"
	h := c.Hash(genuine)
	if c.Hash(forged) != h {
		t.Fatal("the hash is not the signature's")
	}
	c.Put(h, genuine, now.Add(time.Hour), new(int), now)
	if _, ok := c.Get(h, forged); ok {
		t.Error("a token with the genuine one's signature and another payload was found")
	}
	if _, ok := c.Get(h, genuine); !ok {
		t.Error("the genuine token was not found")
	}
}
