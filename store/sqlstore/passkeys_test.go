package sqlstore_test

import (
	"bytes"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/internal/sqltest"
	"github.com/latchkit/auth/store"
)

// A passkey's material and a ceremony's data are a few hundred bytes; the
// columns hold 64 KiB and more on every database (on MySQL a BLOB would
// stop one byte short).
func TestPasskeyColumnsHold64KiB(t *testing.T) {
	big := bytes.Repeat([]byte{0xa5}, 64<<10+1)
	for _, b := range sqltest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			ctx := t.Context()
			st := sqltest.NewStore(t, b)
			now := authtest.Start
			pk := store.Login{LoginKey: store.WebAuthnKey("example.com", "cred-1"), ID: "u1", Email: "ada@example.com",
				Material: big, CreatedAt: now}
			if err := st.CreateUser(ctx, store.User{ID: "u1", TimeJoined: now}, pk); err != nil {
				t.Fatalf("CreateUser with %d bytes of material: %v", len(big), err)
			}
			if l, err := st.Login(ctx, pk.LoginKey); err != nil || !bytes.Equal(l.Material, big) {
				t.Errorf("Login: %d bytes of material, %v; want the %d written", len(l.Material), err, len(big))
			}
			h := sha256.Sum256([]byte("options"))
			if err := st.CreateCode(ctx, store.Code{Hash: h, Kind: store.CodePasskeyOptions, Data: big,
				CreatedAt: now, ExpiresAt: now.Add(time.Minute)}); err != nil {
				t.Fatalf("CreateCode with %d bytes of data: %v", len(big), err)
			}
			if c, err := st.Code(ctx, store.CodePasskeyOptions, h, now); err != nil || !bytes.Equal(c.Data, big) {
				t.Errorf("Code: %d bytes of data, %v; want the %d written", len(c.Data), err, len(big))
			}
		})
	}
}
