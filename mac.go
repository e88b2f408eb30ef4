package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"hash"
)

// mac appends to dst the HMAC-SHA256, with key's HMAC key, of label and
// then msg. The keyed states are pooled per key: setting one up costs two
// hash blocks and five allocations, and every refresh takes three MACs
// for its refresh tokens and, with HS256, a fourth to sign the access
// token. Without the pool a refresh on memstore made 75 allocations
// instead of 55 and took about a fifth longer (BenchmarkRefresh/HS256,
// 8.2 µs against 6.8 µs).
func (key *signingKey) mac(dst, label, msg []byte) []byte {
	h, _ := key.macs.Get().(hash.Hash)
	if h == nil {
		h = hmac.New(sha256.New, key.sign.([]byte))
	} else {
		h.Reset()
	}
	h.Write(label)
	h.Write(msg)
	dst = h.Sum(dst)
	key.macs.Put(h)
	return dst
}
