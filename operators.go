package auth

import (
	"context"
	"errors"
	"fmt"

	"github.com/latchkit/auth/store"
)

// UserPage is a page of users, as ListUsers returns it.
type UserPage struct {
	// Users are the page's users, in the order asked for.
	Users []User
	// Next is the cursor of the next page (store.UserQuery.After), or ""
	// if no user came after this page when it was read.
	Next string
}

// ListUsers returns a page of users for the application's operators:
// oldest or newest first, filtered by email, provider or phone, as q
// says (see store.UserQuery), with the cursor of the next page. The
// pages resume after the last user of the page before, so users who sign
// up or are deleted while an operator pages never make another appear
// twice or go missing.
//
// The Store must implement store.UserLister, as memstore and sqlstore
// do; otherwise the error matches errors.ErrUnsupported. A cursor that
// ListUsers did not return is store.ErrBadCursor.
func (a *Auth) ListUsers(ctx context.Context, q store.UserQuery) (UserPage, error) {
	l, err := a.userLister()
	if err != nil {
		return UserPage{}, err
	}
	page, err := l.ListUsers(ctx, q)
	if err != nil {
		return UserPage{}, err
	}
	out := UserPage{Users: make([]User, 0, len(page.Users)), Next: page.Next}
	for _, u := range page.Users {
		user, err := a.UserByID(ctx, u.ID)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted since the page was read
		} else if err != nil {
			return UserPage{}, err
		}
		out.Users = append(out.Users, user)
	}
	return out, nil
}

// CountUsers counts the users that q's filters match; its paging fields
// are ignored. Like ListUsers, it needs a store.UserLister.
func (a *Auth) CountUsers(ctx context.Context, q store.UserQuery) (int64, error) {
	l, err := a.userLister()
	if err != nil {
		return 0, err
	}
	return l.CountUsers(ctx, q)
}

func (a *Auth) userLister() (store.UserLister, error) {
	l, ok := a.store.(store.UserLister)
	if !ok {
		return nil, fmt.Errorf("auth: listing users needs a Store that implements store.UserLister; %T does not: %w", a.store, errors.ErrUnsupported)
	}
	return l, nil
}
