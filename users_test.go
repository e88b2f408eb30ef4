package auth_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
)

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestUserObjectShape(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	joined := float64(authtest.Start.UnixMilli())
	for _, tc := range []struct {
		fdi    string
		legacy bool
	}{
		{"", false},
		{"1.17", true},
		{"2.0", true},
		{"2.1", true},
		{"1.16,1.17", true},
		{"1.17,2.0", true},
		{"1.18", false},
		{"3.0", false},
		{"3.1,4.0,4.1,4.2", false},
		{"1.16,1.17,1.18,1.19,2.0,3.0,3.1,4.0,4.1", false},
	} {
		t.Run("fdi="+tc.fdi, func(t *testing.T) {
			t.Parallel()
			for _, path := range []string{"signup", "signin"} {
				c := s.NewClient(authtest.Header)
				if tc.fdi != "" {
					c.Header.Set("fdi-version", tc.fdi)
				}
				email := s.NewEmail()
				var res *authtest.Response
				if path == "signin" {
					s.NewClient(authtest.Header).SignUp(email, authtest.Password)
					res = c.SignIn(email, authtest.Password)
				} else {
					res = c.SignUp(email, authtest.Password)
				}
				if res.Status != "OK" {
					t.Fatalf("%s: %d %s", path, res.StatusCode, res.Body)
				}
				u, err := s.Auth.UserByEmail(t.Context(), email)
				if err != nil {
					t.Fatal(err)
				}
				user, _ := res.JSON["user"].(map[string]any)
				if tc.legacy {
					want := map[string]any{"id": u.ID, "email": email, "timeJoined": joined, "tenantIds": []any{"public"}}
					if !reflect.DeepEqual(user, want) {
						t.Errorf("%s: user %v, want the legacy shape %v", path, user, want)
					}
					continue
				}
				want := map[string]any{
					"id": u.ID, "isPrimaryUser": false, "tenantIds": []any{"public"},
					"emails": []any{email}, "phoneNumbers": []any{}, "thirdParty": []any{},
					"webauthn": map[string]any{"credentialIds": []any{}}, // required by FDI 4.2
					"loginMethods": []any{map[string]any{
						"recipeId": "emailpassword", "recipeUserId": u.ID, "tenantIds": []any{"public"},
						"email": email, "timeJoined": joined, "verified": false,
					}},
					"timeJoined": joined,
				}
				if !reflect.DeepEqual(user, want) {
					t.Errorf("%s: user %v (keys %v), want %v", path, user, keysOf(user), want)
				}
			}
		})
	}
}
