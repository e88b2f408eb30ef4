package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

// banTests run only for stores that implement store.Banner.
var banTests = []test{
	{"BanEndsSessions", testBanEndsSessions},
	{"BannedCannotStartSessions", testBannedCannotStart},
	{"BanRunsOut", testBanRunsOut},
	{"UnbanRestoresNothing", testUnbanRestoresNothing},
	{"UnknownUser", testBanUnknownUser},
	{"BanRacesSignIns", testBanRacesSignIns},
	{"ListedWithBan", testBanListed},
}

func banner(t *testing.T, s store.Store) store.Banner {
	t.Helper()
	b, ok := s.(store.Banner)
	if !ok {
		t.Fatal("newStore returned a store that is not a Banner, unlike the first one")
	}
	return b
}

func mustBan(t *testing.T, s store.Store, userID string, b store.Ban) []string {
	t.Helper()
	handles, err := banner(t, s).BanUser(t.Context(), userID, b)
	if err != nil {
		t.Fatalf("BanUser(%q): banning an existing user must succeed; got error %v", userID, err)
	}
	return handles
}

func testBanEndsSessions(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	mustCreateUser(t, s, "u2")
	mustCreateSession(t, s, newSession("s1", "u1", at(0), at(ttl)), "s1/r0")
	mustCreateSession(t, s, newSession("s2", "u1", at(time.Minute), at(ttl)), "s2/r0")
	mustCreateSession(t, s, newSession("s3", "u2", at(0), at(ttl)), "s3/r0")
	before, _ := s.UserByID(t.Context(), "u1")

	ban := store.Ban{At: at(time.Hour), Until: at(48 * time.Hour), Reason: "chargebacks", By: "op"}
	handles := mustBan(t, s, "u1", ban)
	if len(handles) != 2 || handles[0] != "s2" || handles[1] != "s1" {
		t.Errorf("BanUser must return the handles of the sessions it ended, newest first; got %q, want [s2 s1]", handles)
	}
	for _, h := range []string{"s1", "s2"} {
		_, err := s.Session(t.Context(), h, at(2*time.Hour))
		wantEnded(t, err, store.EndBanned, "Session of a banned user's session")
		_, err = s.RotateRefreshToken(t.Context(), rotation(h+"/r0", h+"/r1", at(2*time.Hour), 0))
		wantEnded(t, err, store.EndBanned, "RotateRefreshToken of a banned user's session")
	}
	if _, err := s.Session(t.Context(), "s3", at(2*time.Hour)); err != nil {
		t.Errorf("BanUser must leave other users' sessions; Session(s3): %v", err)
	}
	u, err := s.UserByID(t.Context(), "u1")
	if err != nil {
		t.Fatalf("UserByID of a banned user: %v", err)
	}
	if u.SessionEpoch <= before.SessionEpoch {
		t.Errorf("BanUser must advance the user's SessionEpoch; got %d, was %d", u.SessionEpoch, before.SessionEpoch)
	}
	if !sameTime(u.Ban.At, ban.At) || !sameTime(u.Ban.Until, ban.Until) || u.Ban.Reason != ban.Reason || u.Ban.By != ban.By {
		t.Errorf("UserByID must return the ban as made; got %+v, want %+v", u.Ban, ban)
	}
	if l, err := s.Login(t.Context(), store.EmailPasswordKey("u1@example.com")); err != nil || l.UserID != "u1" {
		t.Errorf("BanUser must leave the user's logins; Login: %+v, %v", l, err)
	}
}

func testBannedCannotStart(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	mustBan(t, s, "u1", store.Ban{At: at(0), Reason: "spam"})
	u, _ := s.UserByID(t.Context(), "u1")
	if !u.Ban.Until.IsZero() {
		t.Errorf("a ban without an end must be read back without one; got Until %v", u.Ban.Until)
	}
	sess := newSession("s1", "u1", at(time.Hour), at(ttl))
	err := s.CreateSession(t.Context(), sess, token("s1/r0"), u.SessionEpoch)
	if !errors.Is(err, store.ErrBanned) {
		t.Errorf("CreateSession for a banned user, under the current epoch, must return ErrBanned; got %v", err)
	}
	if _, err := s.Session(t.Context(), "s1", at(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused session must not exist; Session: %v", err)
	}
}

func testBanRunsOut(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	mustBan(t, s, "u1", store.Ban{At: at(0), Until: at(time.Hour)})
	u, _ := s.UserByID(t.Context(), "u1")
	early := newSession("s1", "u1", at(time.Hour-time.Second), at(ttl))
	if err := s.CreateSession(t.Context(), early, token("s1/r0"), u.SessionEpoch); !errors.Is(err, store.ErrBanned) {
		t.Errorf("CreateSession before the ban's Until must return ErrBanned; got %v", err)
	}
	late := newSession("s2", "u1", at(time.Hour), at(ttl))
	if err := s.CreateSession(t.Context(), late, token("s2/r0"), u.SessionEpoch); err != nil {
		t.Errorf("CreateSession at the ban's Until must succeed: the ban has run out; got %v", err)
	}
}

func testUnbanRestoresNothing(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	mustCreateSession(t, s, newSession("s1", "u1", at(0), at(ttl)), "s1/r0")
	ban := store.Ban{At: at(time.Minute), Reason: "spam", By: "op"}
	mustBan(t, s, "u1", ban)
	lifted, err := banner(t, s).UnbanUser(t.Context(), "u1")
	if err != nil || !sameTime(lifted.At, ban.At) || lifted.Reason != "spam" {
		t.Errorf("UnbanUser must return the ban it lifted; got %+v, %v", lifted, err)
	}
	_, err = s.Session(t.Context(), "s1", at(time.Hour))
	wantEnded(t, err, store.EndBanned, "Session of a session a lifted ban ended")
	u, _ := s.UserByID(t.Context(), "u1")
	if u.Ban != (store.Ban{}) {
		t.Errorf("UserByID after UnbanUser must return the zero Ban; got %+v", u.Ban)
	}
	mustCreateSession(t, s, newSession("s2", "u1", at(time.Hour), at(ttl)), "s2/r0")
	again, err := banner(t, s).UnbanUser(t.Context(), "u1")
	if err != nil || again != (store.Ban{}) {
		t.Errorf("UnbanUser of a user with no ban must return the zero Ban; got %+v, %v", again, err)
	}
}

func testBanUnknownUser(t *testing.T, s store.Store) {
	if _, err := banner(t, s).BanUser(t.Context(), "nobody", store.Ban{At: at(0)}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("BanUser of an unknown user must return ErrNotFound; got %v", err)
	}
	if _, err := banner(t, s).UnbanUser(t.Context(), "nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UnbanUser of an unknown user must return ErrNotFound; got %v", err)
	}
}

// testBanRacesSignIns starts sessions under the epoch read before a ban
// while the ban is made: each must either be ended by the ban or be
// refused, never outlive it.
func testBanRacesSignIns(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	u, _ := s.UserByID(t.Context(), "u1")
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			h := "s" + string(rune('a'+i))
			errs[i] = s.CreateSession(t.Context(), newSession(h, "u1", at(time.Minute), at(ttl)), token(h+"/r0"), u.SessionEpoch)
		})
	}
	mustBan(t, s, "u1", store.Ban{At: at(0)})
	wg.Wait()
	for i, err := range errs {
		h := "s" + string(rune('a'+i))
		if err != nil {
			if !errors.Is(err, store.ErrSessionsEnded) && !errors.Is(err, store.ErrBanned) {
				t.Errorf("CreateSession(%s) racing a ban: %v; want success, ErrSessionsEnded or ErrBanned", h, err)
			}
			continue
		}
		_, err := s.Session(t.Context(), h, at(time.Hour))
		wantEnded(t, err, store.EndBanned, "Session of a session started while its user was banned")
	}
}

func testBanListed(t *testing.T, s store.Store) {
	l, ok := s.(store.UserLister)
	if !ok {
		t.Skip("the store lists no users")
	}
	mustCreateUser(t, s, "u1")
	mustBan(t, s, "u1", store.Ban{At: at(0), Reason: "spam"})
	page, err := l.ListUsers(t.Context(), store.UserQuery{})
	if err != nil || len(page.Users) != 1 || page.Users[0].Ban.Reason != "spam" || !sameTime(page.Users[0].Ban.At, at(0)) {
		t.Errorf("ListUsers must list a user with their ban; got %+v, %v", page.Users, err)
	}
}
