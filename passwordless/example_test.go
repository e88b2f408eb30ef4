package passwordless_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/store/memstore"
)

// texts is a TextSender that keeps what it is given, where an
// application would call its SMS provider.
type texts struct {
	mu   sync.Mutex
	sent []passwordless.TextMessage
}

func (t *texts) SendText(_ context.Context, m passwordless.TextMessage) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sent = append(t.sent, m)
	return nil
}

// Sign in with a code sent by text message: the browser asks for a code
// for a phone number, the person types the code they got, and the same
// browser (it holds the flow's device id) sends it back.
func ExampleTextSender() {
	sms := &texts{}
	a, err := auth.New(auth.Config{
		Store:        memstore.New(),
		AppURL:       "https://app.example",
		Email:        auth.EmailConfig{Mailer: mailer.NewLog(io.Discard)},
		Passwordless: passwordless.Config{Flow: passwordless.Code, TextSender: sms},
	})
	if err != nil {
		log.Fatal(err)
	}
	call := func(path, body string) map[string]any {
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Header.Set("st-auth-mode", "header")
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		var answer map[string]any
		json.Unmarshal(rec.Body.Bytes(), &answer)
		return answer
	}
	flow := call("/auth/signinup/code", `{"phoneNumber":"+1 (415) 555-0100"}`)
	fmt.Println(flow["status"], flow["flowType"])
	a.Close(context.Background()) // the text goes out off the request's path

	m := sms.sent[0]
	fmt.Println(m.To, len(m.Code), m.ValidFor)
	body, _ := json.Marshal(map[string]any{"deviceId": flow["deviceId"], "preAuthSessionId": flow["preAuthSessionId"], "userInputCode": m.Code})
	signedIn := call("/auth/signinup/code/consume", string(body))
	fmt.Println(signedIn["status"], signedIn["createdNewRecipeUser"])
	// Output:
	// OK USER_INPUT_CODE
	// +14155550100 6 15 minutes
	// OK true
}
