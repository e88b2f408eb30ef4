package emailpassword

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/internal/wire"
)

// The validation messages are the translation keys of the SuperTokens UI
// components: they must stay byte-identical.
const (
	msgEmailTaken       = "This email already exists. Please sign in instead."
	msgPasswordShort    = "Password must contain at least 8 characters, including a number"
	msgPasswordLong     = "Password's length must be lesser than 100 characters"
	msgPasswordNoLetter = "Password must contain at least one alphabet"
	msgPasswordNoDigit  = "Password must contain at least one number"
)

// Limits on single values, far above any real input; they bound the work an
// attacker can cause (a password is hashed) whatever the policy says.
const (
	maxPasswordLen = 1024 // bytes
)

// fieldError is one entry of a FIELD_ERROR answer.
type fieldError struct {
	ID    string `json:"id"`
	Error string `json:"error"`
}

// credentials are the decoded form fields of a sign-up or sign-in.
type credentials struct {
	email, password string
}

// formFields decodes the formFields array of a request and returns the
// values of the wanted ids as raw JSON. Missing wanted ids are absent from
// the map. Every structural problem is a bad request, as in the SuperTokens
// backends.
func formFields(raw json.RawMessage, wanted ...string) (map[string]json.RawMessage, error) {
	if raw == nil || string(raw) == "null" {
		return nil, wire.BadRequest("Missing input param: formFields")
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, wire.BadRequest("formFields must be an array")
	}
	if len(elems) > len(wanted) {
		return nil, wire.BadRequest("Are you sending too many formFields?")
	}
	out := make(map[string]json.RawMessage, len(wanted))
	for _, e := range elems {
		id, value, err := formField(e)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(wanted, id) {
			return nil, wire.BadRequest("formFields contains an unknown field id")
		}
		if _, dup := out[id]; dup {
			return nil, wire.BadRequest("formFields contains a repeated field id")
		}
		out[id] = value
	}
	return out, nil
}

// formField decodes one element of formFields: an object with a string
// "id" and a "value" of any kind.
func formField(elem json.RawMessage) (id string, value json.RawMessage, err error) {
	// A map, not a struct: keys match exactly, as in the SuperTokens
	// backends ("ID" is not "id"), and a null value stays apart from an
	// absent one.
	var f map[string]json.RawMessage
	if err := json.Unmarshal(elem, &f); err != nil || f == nil {
		return "", nil, wire.BadRequest("All elements of formFields must be an object")
	}
	rawID, hasID := f["id"]
	value, hasValue := f["value"]
	if !hasID || !hasValue || !bytes.HasPrefix(rawID, []byte{'"'}) || json.Unmarshal(rawID, &id) != nil {
		return "", nil, wire.BadRequest("All elements of formFields must contain an 'id' and 'value' field")
	}
	return id, value, nil
}

// stringField returns the string value of a form field. A missing field or
// JSON null is "" (the caller reports it as not optional); any other
// non-string is a bad request.
func stringField(fields map[string]json.RawMessage, id string) (string, error) {
	v, ok := fields[id]
	if !ok || string(v) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", wire.BadRequest(id + " value must be a string")
	}
	return s, nil
}

// decodeCredentials reads the email and password of a sign-up or sign-in
// request. It returns field errors for values that fail validation. The
// password policy applies to a new password (sign-up), not at sign-in,
// where only emptiness is checked.
func (p *Recipe) decodeCredentials(w http.ResponseWriter, r *http.Request, newPassword bool) (credentials, []fieldError, error) {
	// A map, so that only "formFields" itself matches, not "FormFields".
	var req map[string]json.RawMessage
	if err := p.k.ReadJSON(w, r, &req); err != nil {
		return credentials{}, nil, err
	}
	fields, err := formFields(req["formFields"], "email", "password")
	if err != nil {
		return credentials{}, nil, err
	}
	email, err := stringField(fields, "email")
	if err != nil {
		return credentials{}, nil, err
	}
	password, err := stringField(fields, "password")
	if err != nil {
		return credentials{}, nil, err
	}
	c := credentials{email: address.Normalise(email), password: password}

	// Password first, as the SuperTokens backends order them; clients
	// match by id.
	var errs []fieldError
	if password == "" {
		errs = append(errs, fieldError{"password", wire.MsgFieldNotOptional})
	} else if newPassword {
		if msg := p.checkNewPassword(p.k.Tenant(r.Context()), password); msg != "" {
			errs = append(errs, fieldError{"password", msg})
		}
	}
	if msg := wire.CheckEmail(c.email); msg != "" {
		errs = append(errs, fieldError{"email", msg})
	}
	return c, errs, nil
}

// readOneField decodes a request whose formFields hold the single field
// id, and returns the whole body (for other top-level keys) and that
// field's string value.
func (p *Recipe) readOneField(w http.ResponseWriter, r *http.Request, id string) (map[string]json.RawMessage, string, error) {
	var req map[string]json.RawMessage
	if err := p.k.ReadJSON(w, r, &req); err != nil {
		return nil, "", err
	}
	fields, err := formFields(req["formFields"], id)
	if err != nil {
		return nil, "", err
	}
	v, err := stringField(fields, id)
	return req, v, err
}

func writeFieldErrors(w http.ResponseWriter, errs []fieldError) {
	wire.JSON(w, http.StatusOK, struct {
		Status     string       `json:"status"`
		FormFields []fieldError `json:"formFields"`
	}{"FIELD_ERROR", errs})

}
