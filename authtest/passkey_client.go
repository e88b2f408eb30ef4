package authtest

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// Passkeys over HTTP: the SuperTokens WebAuthn recipe (rid "webauthn"),
// with an Authenticator in the browser's place. The server needs
// Config.Passkeys (passkey.New(passkey.Config{})) and an AppURL on a domain
// name, which is the relying party: browsers refuse WebAuthn on an IP
// address, and the test server's own URL is one.

// NewAuthenticator returns an Authenticator for pages at the origin of
// the server's AppURL, the one its passkeys are for.
func (s *Server) NewAuthenticator() *Authenticator {
	u, err := url.Parse(s.AuthConfig.AppURL)
	if err != nil || u.Host == "" {
		s.tb.Fatalf("authtest: AppURL %q has no origin", s.AuthConfig.AppURL)
	}
	return NewAuthenticator(u.Scheme + "://" + u.Host)
}

// PasskeyRegisterOptions asks for the options of a passkey registration
// for email, as the SDKs' getRegisterOptions does. The answer has the
// "webauthnGeneratedOptionsId" and the WebAuthn options at the top level;
// its Body is what Authenticator.Register takes.
func (c *Client) PasskeyRegisterOptions(email string) *Response {
	c.tb.Helper()
	b, _ := json.Marshal(map[string]string{"email": email})
	return c.do(http.MethodPost, c.path("/webauthn/options/register"), b, "webauthn", "")
}

// PasskeySignInOptions asks for the options of a passkey sign-in, as the
// SDKs' getSignInOptions does; its Body is what Authenticator.Assert
// takes.
func (c *Client) PasskeySignInOptions() *Response {
	c.tb.Helper()
	return c.do(http.MethodPost, c.path("/webauthn/options/signin"), nil, "webauthn", "")
}

// PasskeySignUp signs up with a credential that Authenticator.Register
// made from the options of optionsID.
func (c *Client) PasskeySignUp(optionsID string, credential []byte) *Response {
	c.tb.Helper()
	return c.do(http.MethodPost, c.path("/webauthn/signup"), ceremonyBody(optionsID, credential, nil), "webauthn", c.AccessToken)
}

// PasskeySignIn signs in with a credential that Authenticator.Assert made
// from the options of optionsID. Sending the same credential again is a
// replay.
func (c *Client) PasskeySignIn(optionsID string, credential []byte) *Response {
	c.tb.Helper()
	return c.do(http.MethodPost, c.path("/webauthn/signin"), ceremonyBody(optionsID, credential, nil), "webauthn", c.AccessToken)
}

// SignUpWithPasskey signs up with a new passkey of a for email, as the
// SDKs and a browser do: it asks for registration options, lets a
// register a credential, and posts it to /webauthn/signup. It fails the
// test if the server gives no options or a refuses them (see Next to
// make a registration the server must refuse).
func (c *Client) SignUpWithPasskey(a *Authenticator, email string) *Response {
	c.tb.Helper()
	id, cred := c.register(a, email)
	return c.PasskeySignUp(id, cred)
}

// SignInWithPasskey signs in with the most recently registered passkey of
// a for the server, as the SDKs and a browser do: it asks for sign-in
// options, lets a sign them, and posts the assertion to /webauthn/signin.
// It fails the test if the server gives no options or a has no passkey
// for them.
func (c *Client) SignInWithPasskey(a *Authenticator) *Response {
	c.tb.Helper()
	res := c.PasskeySignInOptions()
	id := optionsID(c, "webauthn/options/signin", res)
	cred, err := a.Assert(res.Body)
	if err != nil {
		c.tb.Fatalf("authtest: the authenticator's assertion: %v", err)
	}
	return c.PasskeySignIn(id, cred)
}

// AddPasskey registers another passkey of a for the session's user, as
// the SDKs' registerCredential does: registration options for the email
// of the session's login method ("rsub"), or, if that method has none
// (a passkey added this way), of the user's first method with an email,
// then a POST to /webauthn/credential with that method as recipeUserId.
// It fails the test if the client has no session, the user has no email,
// the server gives no options or a refuses them.
func (c *Client) AddPasskey(a *Authenticator) *Response {
	c.tb.Helper()
	userID, loginID := c.sessionIDs()
	u, err := c.srv.Auth.UserByID(c.tb.Context(), userID)
	if err != nil {
		c.tb.Fatalf("authtest: AddPasskey: the session's user %s: %v", userID, err)
	}
	var recipeUserID, email string
	for _, m := range u.LoginMethods {
		if m.Email != "" && (m.ID == loginID || email == "") {
			recipeUserID, email = m.ID, m.Email
		}
	}
	if email == "" {
		c.tb.Fatalf("authtest: AddPasskey: user %s has no login method with an email", userID)
	}
	id, cred := c.register(a, email)
	return c.do(http.MethodPost, c.path("/webauthn/credential"), ceremonyBody(id, cred, &recipeUserID), "webauthn", c.AccessToken)
}

// ListPasskeys lists the passkeys of the session's user:
// {"status":"OK","credentials":[{"webauthnCredentialId","relyingPartyId",
// "recipeUserId","createdAt"}]}.
func (c *Client) ListPasskeys() *Response {
	c.tb.Helper()
	return c.do(http.MethodGet, c.path("/webauthn/credential/list"), nil, "webauthn", c.AccessToken)
}

// RemovePasskey removes a passkey of the session's user, by its
// webauthnCredentialId (AuthenticatorCredential.EncodedID).
func (c *Client) RemovePasskey(id string) *Response {
	c.tb.Helper()
	b, _ := json.Marshal(map[string]string{"webauthnCredentialId": id})
	return c.do(http.MethodPost, c.path("/webauthn/credential/remove"), b, "webauthn", c.AccessToken)
}

// register gets registration options for email and has a register a
// credential for them.
func (c *Client) register(a *Authenticator, email string) (string, []byte) {
	c.tb.Helper()
	res := c.PasskeyRegisterOptions(email)
	id := optionsID(c, "webauthn/options/register", res)
	cred, err := a.Register(res.Body)
	if err != nil {
		c.tb.Fatalf("authtest: the authenticator's registration: %v", err)
	}
	return id, cred
}

// optionsID returns the webauthnGeneratedOptionsId of an options answer,
// or fails the test.
func optionsID(c *Client, endpoint string, res *Response) string {
	c.tb.Helper()
	id, _ := res.JSON["webauthnGeneratedOptionsId"].(string)
	if res.StatusCode != http.StatusOK || res.Status != "OK" || id == "" {
		c.tb.Fatalf("authtest: %s answered %d %s", endpoint, res.StatusCode, res.Body)
	}
	return id
}

func ceremonyBody(optionsID string, credential []byte, recipeUserID *string) []byte {
	b, _ := json.Marshal(struct {
		OptionsID    string          `json:"webauthnGeneratedOptionsId"`
		RecipeUserID *string         `json:"recipeUserId,omitempty"`
		Credential   json.RawMessage `json:"credential"`
	}{optionsID, recipeUserID, credential})
	return b
}

// sessionIDs reads the user ("sub") and the login method ("rsub") from
// the client's access token, or fails the test.
func (c *Client) sessionIDs() (userID, loginID string) {
	c.tb.Helper()
	access, _ := c.Tokens()
	parts := strings.Split(access, ".")
	var claims struct {
		Sub  string `json:"sub"`
		Rsub string `json:"rsub"`
	}
	if len(parts) == 3 {
		if p, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil {
			json.Unmarshal(p, &claims)
		}
	}
	if claims.Sub == "" {
		c.tb.Fatalf("authtest: the client has no session (no access token with a sub)")
	}
	return claims.Sub, claims.Rsub
}
