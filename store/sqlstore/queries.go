package sqlstore

import (
	"strconv"
	"strings"

	"github.com/latchkit/auth/store"
)

// loginColumns are the columns scanLogin reads, in its order, and
// loginsOf the tables they come from: the user's session epoch is read in
// the same statement as the login, so the two are one snapshot.
const (
	loginColumns = `auth_logins.tenant, method, third_party, subject, auth_logins.id, user_id, email, email_verified, email_proven, material,
		password_hash, created_at, owned_email IS NOT NULL, session_epoch`
	loginsOf = ` FROM auth_logins JOIN auth_users ON auth_users.id = auth_logins.user_id`

	// ceremonyColumns are the columns scanCeremony reads, in its order.
	ceremonyColumns = `hash, tenant, user_id, login_id, email, data, created_at, expires_at`

	// loginKeyIs matches the login key given as the arguments tenant,
	// method, third party and subject.
	loginKeyIs = `auth_logins.tenant = ? AND method = ? AND third_party = ? AND subject = ?`
)

// queries holds the statements of a dialect, with its placeholders.
type queries struct {
	insertUser, userByID, userExists                          string
	insertLogin, login, userLogins, passwordLogin             string
	userByLogin                                               string
	loginsByEmail, loginForUpdate, updateLoginEmail           string
	passwordLoginExists, updatePassword, setPassword          string
	loginByID, loginByIDForUpdate, loginUser, loginIDTaken    string
	ownerOf, claimEmail, setVerified, releaseEmail            string
	verifyEmail, otherWaysIn                                  string
	loginHandlesForUpdate, deleteLogin, deleteLoginCodes      string
	deleteUserLogins, deleteUserCodes, deleteUser             string
	insertCode, code, verificationForUpdate, verificationUser string
	deleteLoginVerifications                                  string

	ceremonyForUpdate, recoveriesForUpdate, setMaterial string
	deleteCode, deleteAddressRecoveries                 string

	codeUser, codeForUpdate, addressLoginsForUpdate string
	addressHeldByOther, moveLogin, deleteUserKind   string

	// Compare-and-swap of a login's material and a session's factors:
	// from bytes (the stored ones equal to an argument), or from none
	// (NULL or empty).
	swapMaterial, swapMaterialFromNone string
	swapFactors, swapFactorsFromNone   string

	flowForUpdate, addressFlowsForUpdate, countAttempt string

	insertSession, session, userSessions string

	rotateCurrent    string // the one-statement rotation of a current token
	rotatedSession   string // MySQL, which cannot return what it updates
	legacyToken      string
	sessionForUpdate string
	rotate, endTheft string

	// rotateCurrent and rotatedSession, with the user's roles and
	// permissions in a tenant (store.Rotation.RolesOf).
	rotateCurrentRoles, rotatedSessionRoles string

	endSession, endLoginSessions                               string
	userHandlesForUpdate, deleteUserTokens, deleteUserSessions string
	endUserSessions, endEpoch                                  string
	userForUpdate, banUser, unbanUser                          string

	resetUser, resetForUpdate, deleteUserResets       string
	passwordForUpdate, dropPasskeyCodes, dropPasskeys string

	signingKeys, insertKey string

	rateLimit, takeRateLimit, refundRateLimit, resetRateLimit string

	deleteExpiredSessionTokens, deleteExpiredSessions, deleteExpiredTokens,
	deleteExpiredCodes, deleteExpiredKeys, deleteExpiredLimits string

	roles roleQueries // roles.go

	tenants tenantQueries // tenant.go

	userList userListQueries // userlist.go
}

func newQueries(d Dialect) queries {
	// Insert-if-absent, so a duplicate key is "0 rows" and not an error
	// whose shape depends on the driver. MySQL's no-op update reports 0
	// affected rows for a duplicate.
	ignore := func(insert, key string) string {
		if d == MySQL {
			return insert + " ON DUPLICATE KEY UPDATE " + key + " = " + key
		}
		return insert + " ON CONFLICT DO NOTHING"
	}
	// Row locks where the database has them; SQLite's BEGIN IMMEDIATE
	// already holds the only write lock.
	forUpdate := " FOR UPDATE"
	if d == SQLite {
		forUpdate = ""
	}
	forShare := " FOR SHARE"
	switch d {
	case MySQL:
		forShare = " LOCK IN SHARE MODE" // MariaDB has no FOR SHARE
	case SQLite:
		forShare = ""
	}
	greatest := "GREATEST"
	if d == SQLite {
		greatest = "max"
	}
	q := queries{
		insertUser: ignore(`INSERT INTO auth_users (id, time_joined) VALUES (?, ?)`, "id"),
		userByID:   `SELECT ` + userColumns + ` FROM auth_users WHERE id = ?`,
		userExists: `SELECT 1 FROM auth_users WHERE id = ?` + forUpdate,

		// Any unique key refuses the row: the login's key, its id, or
		// the email it asks to own.
		insertLogin: ignore(`INSERT INTO auth_logins (tenant, method, third_party, subject, id, user_id, email, email_verified,
			email_proven, material, password_hash, created_at, owned_email) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, "method"),
		login:      `SELECT ` + loginColumns + loginsOf + ` WHERE ` + loginKeyIs,
		userLogins: `SELECT ` + loginColumns + loginsOf + ` WHERE user_id = ? AND method <> '` + store.MethodSecondFactors + `' ORDER BY created_at, method, third_party, subject, auth_logins.tenant`,
		// The logins of the user of a login key, each with the user's
		// time_joined besides its session epoch: one statement, one
		// snapshot, for a sign-in.
		userByLogin: `SELECT ` + loginColumns + `, time_joined` + loginsOf + ` WHERE user_id =
			(SELECT user_id FROM auth_logins WHERE ` + loginKeyIs + `)
			AND method <> '` + store.MethodSecondFactors + `' ORDER BY created_at, method, third_party, subject, auth_logins.tenant`,
		passwordLogin: `SELECT ` + loginColumns + loginsOf + ` WHERE user_id = ? AND method = '` + store.MethodEmailPassword + `'`,
		loginsByEmail: `SELECT ` + loginColumns + loginsOf + ` WHERE email = ?
			ORDER BY created_at, user_id, auth_logins.tenant, method, third_party, subject`,
		loginForUpdate: `SELECT ` + loginColumns + loginsOf + ` WHERE ` + loginKeyIs + forUpdate,
		updateLoginEmail: `UPDATE auth_logins SET email = ?, email_verified = ?, email_proven = ?, owned_email = ?
			WHERE tenant = ? AND method = ? AND third_party = ? AND subject = ?`,
		passwordLoginExists: `SELECT 1 FROM auth_logins WHERE user_id = ? AND method = '` + store.MethodEmailPassword + `'`,
		updatePassword: `UPDATE auth_logins SET password_hash = ?
			WHERE user_id = ? AND method = '` + store.MethodEmailPassword + `' AND password_hash = ?`,
		setPassword: `UPDATE auth_logins SET password_hash = ?, email_verified = TRUE, email_proven = TRUE
			WHERE user_id = ? AND method = '` + store.MethodEmailPassword + `'`,

		loginByID:          `SELECT ` + loginColumns + loginsOf + ` WHERE auth_logins.id = ?`,
		loginByIDForUpdate: `SELECT ` + loginColumns + loginsOf + ` WHERE auth_logins.id = ?` + forUpdate,
		loginUser:          `SELECT user_id FROM auth_logins WHERE id = ?`,
		loginIDTaken:       `SELECT 1 FROM auth_logins WHERE id = ?`,
		ownerOf:            `SELECT user_id FROM auth_logins WHERE tenant = ? AND owned_email = ?` + forUpdate,
		claimEmail:         `UPDATE auth_logins SET owned_email = email WHERE id = ?`,
		setVerified:        `UPDATE auth_logins SET email_verified = ?, email_proven = ? WHERE id = ?`,
		releaseEmail:       `UPDATE auth_logins SET owned_email = NULL WHERE id = ?`,
		verifyEmail:        `UPDATE auth_logins SET email_verified = TRUE WHERE id = ?`,
		// The user's ways to sign in besides a login (arguments: user,
		// login): a record of second factors is none.
		otherWaysIn: `SELECT COUNT(*) FROM auth_logins WHERE user_id = ? AND id <> ?
			AND method <> '` + store.MethodSecondFactors + `'`,
		loginHandlesForUpdate: `SELECT handle FROM auth_sessions WHERE user_id = ? AND login_id = ? AND end_reason IS NULL
			ORDER BY created_at DESC, handle` + forUpdate,
		endLoginSessions: `UPDATE auth_sessions SET end_reason = '` + string(store.EndRevoked) + `'
			WHERE user_id = ? AND login_id = ? AND end_reason IS NULL`,
		deleteLogin:              `DELETE FROM auth_logins WHERE id = ?`,
		deleteLoginCodes:         `DELETE FROM auth_codes WHERE login_id = ?`,
		deleteUserLogins:         `DELETE FROM auth_logins WHERE user_id = ?`,
		deleteUserCodes:          `DELETE FROM auth_codes WHERE user_id = ?`,
		deleteUser:               `DELETE FROM auth_users WHERE id = ?`,
		deleteLoginVerifications: `DELETE FROM auth_codes WHERE login_id = ? AND kind = '` + string(store.CodeVerification) + `'`,
		insertCode: ignore(`INSERT INTO auth_codes (hash, kind, tenant, user_id, login_id, email, flow, data, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, "hash"),
		code: `SELECT tenant, user_id, login_id, email, flow, attempts, data, created_at, expires_at FROM auth_codes
			WHERE hash = ? AND kind = ? AND expires_at > ?`,
		verificationUser: `SELECT user_id FROM auth_codes WHERE hash = ? AND kind = '` + string(store.CodeVerification) + `'`,
		verificationForUpdate: `SELECT login_id, email, expires_at FROM auth_codes
			WHERE hash = ? AND kind = '` + string(store.CodeVerification) + `'` + forUpdate,

		// Passwordless flows are locked by address, in the order of
		// their hashes: using a code locks every flow of its address
		// (arguments: code, flow, flow), with the expiry of the code if
		// it is one of the flow's, and adding a code locks its flow, so
		// that neither deadlocks with another.
		flowForUpdate: `SELECT email, expires_at FROM auth_codes
			WHERE hash = ? AND kind = '` + string(store.CodePasswordlessFlow) + `'` + forUpdate,
		addressFlowsForUpdate: `SELECT hash, tenant, email, attempts, created_at, expires_at,
				(SELECT c.expires_at FROM auth_codes c
					WHERE c.hash = ? AND c.kind = '` + string(store.CodePasswordless) + `' AND c.flow = ?)
			FROM auth_codes WHERE kind = '` + string(store.CodePasswordlessFlow) + `' AND email =
				(SELECT f.email FROM auth_codes f WHERE f.hash = ? AND f.kind = '` + string(store.CodePasswordlessFlow) + `')
			ORDER BY hash` + forUpdate,
		countAttempt: `UPDATE auth_codes SET attempts = attempts + 1 WHERE hash = ?`,

		// Passkey ceremonies are locked by hash; recovery links by
		// address, in the order of their hashes, as using one deletes
		// every link of its address (argument: the link's hash), so
		// that two uses of one address's links wait for each other
		// instead of deadlocking. The columns are ceremonyColumns.
		ceremonyForUpdate: `SELECT ` + ceremonyColumns + ` FROM auth_codes
			WHERE hash = ? AND kind = '` + string(store.CodePasskeyOptions) + `'` + forUpdate,
		recoveriesForUpdate: `SELECT ` + ceremonyColumns + ` FROM auth_codes
			WHERE kind = '` + string(store.CodePasskeyRecovery) + `' AND email =
				(SELECT r.email FROM auth_codes r WHERE r.hash = ? AND r.kind = '` + string(store.CodePasskeyRecovery) + `')
			ORDER BY hash` + forUpdate,
		setMaterial: `UPDATE auth_logins SET material = ? WHERE id = ?`,
		deleteCode:  `DELETE FROM auth_codes WHERE hash = ?`,
		deleteAddressRecoveries: `DELETE FROM auth_codes
			WHERE kind = '` + string(store.CodePasskeyRecovery) + `' AND email = ?`,

		// Email changes (emailchange.go): a code of a user is locked by
		// hash and kind after its user (codeUser, then userExists), and
		// read as ceremonyColumns; then the user's logins of the old
		// address (arguments: user, address). A login of another user
		// with the new address is found without a lock (arguments:
		// address, user): its user's lock is not this method's to take.
		// A login moves by id: its key, its address, verified, not
		// proven, owning nothing (arguments: method, third party,
		// subject, email, id).
		codeUser: `SELECT user_id FROM auth_codes WHERE hash = ? AND kind = ?`,
		codeForUpdate: `SELECT ` + ceremonyColumns + ` FROM auth_codes
			WHERE hash = ? AND kind = ?` + forUpdate,
		addressLoginsForUpdate: `SELECT ` + loginColumns + loginsOf + ` WHERE user_id = ? AND email = ?
			ORDER BY created_at, method, third_party, subject` + forUpdate,
		addressHeldByOther: `SELECT 1 FROM auth_logins WHERE tenant = ? AND email = ? AND user_id <> ? LIMIT 1`,
		moveLogin: `UPDATE auth_logins SET method = ?, third_party = ?, subject = ?, email = ?,
			email_verified = TRUE, email_proven = FALSE, owned_email = NULL WHERE id = ?`,
		deleteUserKind: `DELETE FROM auth_codes WHERE user_id = ? AND kind = ?`,

		// A user's record of second factors, or any login's material
		// (arguments: new, id, old (not for FromNone)).
		swapMaterial:         `UPDATE auth_logins SET material = ? WHERE id = ? AND material = ?`,
		swapMaterialFromNone: `UPDATE auth_logins SET material = ? WHERE id = ? AND (material IS NULL OR LENGTH(material) = 0)`,

		// A session is inserted only while its user's session epoch is
		// the one given (arguments: handle, login, created, refreshed,
		// expires, hash, factors, user, epoch): no row if the user is
		// gone or the epoch has passed, and a duplicate key an error. The
		// shared lock on the user's row orders it with a reset or a
		// revocation of every session, which advance the epoch under an
		// exclusive one: on PostgreSQL the insert waits for them and then
		// checks the epoch they committed; on MySQL, whose INSERT ...
		// SELECT reads without locking at READ COMMITTED, the lock makes
		// the read a current one. SQLite has the store's single writer.
		insertSession: `INSERT INTO auth_sessions (handle, user_id, login_id, tenant, created_at, refreshed_at, expires_at,
			current_hash, factors) SELECT ?, id, ?, ?, ?, ?, ?, ?, ? FROM auth_users WHERE id = ? AND session_epoch = ?
			AND (banned_at IS NULL OR banned_until <= ?)` + forShare,
		session: `SELECT ` + sessionColumns + `, end_reason FROM auth_sessions WHERE handle = ?`,
		userSessions: `SELECT ` + sessionColumns + ` FROM auth_sessions WHERE user_id = ? AND expires_at > ? AND end_reason IS NULL
			ORDER BY created_at DESC, handle`,
		// Only a live session's factors change (arguments: new, handle,
		// now, old (not for FromNone)); the column is not indexed, so on
		// PostgreSQL the row is updated in place, as a refresh is.
		swapFactors: `UPDATE auth_sessions SET factors = ?
			WHERE handle = ? AND end_reason IS NULL AND expires_at > ? AND factors = ?`,
		swapFactorsFromNone: `UPDATE auth_sessions SET factors = ?
			WHERE handle = ? AND end_reason IS NULL AND expires_at > ? AND (factors IS NULL OR LENGTH(factors) = 0)`,

		// The common case of a refresh: the presented token is the live
		// session's current one, within its allowance. Nothing is indexed
		// among the columns it writes, so on PostgreSQL the row is updated
		// in place (migration 0003). previous_hash comes first: MySQL
		// assigns left to right, from the values already assigned.
		// Arguments: next, next key, now (exchange), now (refreshed),
		// expires, now, every, handle, presented, now, limit.
		rotateCurrent: `UPDATE auth_sessions SET previous_hash = current_hash, current_hash = ?, current_key = ?,
				generation = generation + 1, superseded_at = ?, refreshed_at = ?, expires_at = ?,
				refresh_allowance = ` + greatest + `(refresh_allowance, ?) + ?
			WHERE handle = ? AND current_hash = ? AND end_reason IS NULL AND expires_at > ? AND refresh_allowance <= ?`,
		rotatedSession: `SELECT user_id, login_id, tenant, created_at, factors FROM auth_sessions WHERE handle = ?`,
		// Locks are always taken in one order, user, then session, then
		// tokens, so that transactions cannot deadlock on each other.
		legacyToken: `SELECT session_handle, expires_at FROM auth_refresh_tokens WHERE hash = ?`,
		sessionForUpdate: `SELECT ` + sessionColumns + `, current_hash, previous_hash, superseded_at, refresh_allowance,
				current_key, end_reason
			FROM auth_sessions WHERE handle = ?` + forUpdate,
		rotate: `UPDATE auth_sessions SET previous_hash = current_hash, current_hash = ?, current_key = ?,
				generation = generation + 1, superseded_at = ?, refreshed_at = ?, expires_at = ?, refresh_allowance = ?
			WHERE handle = ?`,
		endTheft: `UPDATE auth_sessions SET end_reason = '` + string(store.EndTokenTheft) + `' WHERE handle = ?`,

		endSession: `UPDATE auth_sessions SET end_reason = ? WHERE handle = ? AND end_reason IS NULL`,
		userHandlesForUpdate: `SELECT handle FROM auth_sessions WHERE user_id = ? AND end_reason IS NULL
			ORDER BY created_at DESC, handle` + forUpdate,
		endUserSessions: `UPDATE auth_sessions SET end_reason = ? WHERE user_id = ? AND end_reason IS NULL`,
		deleteUserTokens: `DELETE FROM auth_refresh_tokens WHERE session_handle IN
			(SELECT handle FROM auth_sessions WHERE user_id = ?)`,
		deleteUserSessions: `DELETE FROM auth_sessions WHERE user_id = ?`,
		endEpoch:           `UPDATE auth_users SET session_epoch = session_epoch + 1 WHERE id = ?`,
		// A ban (arguments: at, until, reason, by, user) and its lifting
		// (arguments: user); the session inserts read the columns.
		userForUpdate: `SELECT ` + userColumns + ` FROM auth_users WHERE id = ?` + forUpdate,
		banUser:       `UPDATE auth_users SET banned_at = ?, banned_until = ?, ban_reason = ?, banned_by = ? WHERE id = ?`,
		unbanUser:     `UPDATE auth_users SET banned_at = NULL, banned_until = NULL, ban_reason = NULL, banned_by = NULL WHERE id = ?`,

		resetUser: `SELECT user_id FROM auth_codes WHERE hash = ? AND kind = '` + string(store.CodeReset) + `'`,
		resetForUpdate: `SELECT user_id, expires_at FROM auth_codes
			WHERE hash = ? AND kind = '` + string(store.CodeReset) + `'` + forUpdate,
		deleteUserResets: `DELETE FROM auth_codes WHERE user_id = ? AND kind = '` + string(store.CodeReset) + `'`,
		passwordForUpdate: `SELECT email_proven FROM auth_logins
			WHERE user_id = ? AND method = '` + store.MethodEmailPassword + `'` + forUpdate,
		// A reset of an unproven password login drops the user's passkeys
		// (argument: the user); the codes bound to them go first, while
		// the logins still say which.
		dropPasskeyCodes: `DELETE FROM auth_codes WHERE login_id IN (SELECT id FROM auth_logins
			WHERE user_id = ? AND method = '` + store.MethodWebAuthn + `')`,
		dropPasskeys: `DELETE FROM auth_logins WHERE user_id = ? AND method = '` + store.MethodWebAuthn + `'`,

		signingKeys: `SELECT id, algorithm, material, created_at, sign_until, verify_until FROM auth_signing_keys
			WHERE verify_until > ? ORDER BY created_at DESC, id`,
		insertKey: ignore(`INSERT INTO auth_signing_keys (id, algorithm, material, created_at, sign_until, verify_until)
			VALUES (?, ?, ?, ?, ?, ?)`, "id"),

		// The tokens kept from before tokens named their session go with
		// it, before it (the foreign key), and so do any whose session is
		// gone already (SQLite enforces no foreign key unless asked).
		deleteExpiredSessionTokens: `DELETE FROM auth_refresh_tokens WHERE NOT EXISTS (SELECT 1 FROM auth_sessions s
			WHERE s.handle = auth_refresh_tokens.session_handle AND s.expires_at > ?)`,
		deleteExpiredSessions: `DELETE FROM auth_sessions WHERE expires_at <= ?`,
		deleteExpiredTokens:   `DELETE FROM auth_refresh_tokens WHERE expires_at <= ?`,
		deleteExpiredCodes:    `DELETE FROM auth_codes WHERE expires_at <= ?`,
		deleteExpiredKeys:     `DELETE FROM auth_signing_keys WHERE verify_until <= ?`,
		deleteExpiredLimits:   `DELETE FROM auth_rate_limits WHERE tat <= ?`,

		rateLimit:       `SELECT tat FROM auth_rate_limits WHERE limit_key = ?`,
		resetRateLimit:  `DELETE FROM auth_rate_limits WHERE limit_key = ?`,
		refundRateLimit: `UPDATE auth_rate_limits SET tat = tat - ? WHERE limit_key = ?`,
	}
	// One statement, counted only if the recorded time is at most the
	// limit (now plus burst-1 intervals): the new time is the later of
	// the recorded one and now, plus the interval. An insert or an update
	// affects a row, a refusal none (MySQL without CLIENT_FOUND_ROWS,
	// as insert-if-absent above relies on too).
	switch d {
	case Postgres:
		// Arguments: key, now+every, now, every, limit.
		q.takeRateLimit = `INSERT INTO auth_rate_limits (limit_key, tat) VALUES (?, ?)
			ON CONFLICT (limit_key) DO UPDATE SET tat = GREATEST(auth_rate_limits.tat, ?) + ?
			WHERE auth_rate_limits.tat <= ?`
	case SQLite:
		q.takeRateLimit = `INSERT INTO auth_rate_limits (limit_key, tat) VALUES (?, ?)
			ON CONFLICT (limit_key) DO UPDATE SET tat = max(auth_rate_limits.tat, ?) + ?
			WHERE auth_rate_limits.tat <= ?`
	case MySQL:
		// Arguments: key, now+every, limit, now, every.
		q.takeRateLimit = `INSERT INTO auth_rate_limits (limit_key, tat) VALUES (?, ?)
			ON DUPLICATE KEY UPDATE tat = IF(tat <= ?, GREATEST(tat, ?) + ?, tat)`
	}
	if d != MySQL {
		// The rest of the row, which the update does not write; MySQL
		// cannot return what it updates, and reads it after
		// (rotatedSession).
		q.rotateCurrent += " RETURNING user_id, login_id, tenant, created_at, factors"
		// Arguments: those of rotateCurrent, then the tenant.
		q.rotateCurrentRoles = q.rotateCurrent + ", " + sessionRolesJSON(d)
	}
	if d == MySQL {
		// The session with a row for each of the user's roles in the
		// tenant and each of its permissions, as userRoles reads them,
		// or one row with NULLs if it holds none (arguments: tenant,
		// handle).
		q.rotatedSessionRoles = `SELECT s.user_id, s.login_id, s.tenant, s.created_at, s.factors, h.role, p.permission
			FROM auth_sessions s
			LEFT JOIN auth_user_roles h ON h.tenant = ? AND h.user_id = s.user_id
			LEFT JOIN auth_role_permissions p ON p.role = h.role
			WHERE s.handle = ? ORDER BY h.seq, p.seq`
		// A join locks only the rows it deletes; MySQL may run the IN
		// subquery form as a scan that locks rows of other sessions and
		// deadlocks with their rotations.
		q.deleteUserTokens = `DELETE t FROM auth_refresh_tokens t JOIN auth_sessions s ON s.handle = t.session_handle
			WHERE s.user_id = ?`
		q.deleteExpiredSessionTokens = `DELETE t FROM auth_refresh_tokens t
			LEFT JOIN auth_sessions s ON s.handle = t.session_handle AND s.expires_at > ? WHERE s.handle IS NULL`
		q.dropPasskeyCodes = `DELETE c FROM auth_codes c JOIN auth_logins l ON l.id = c.login_id
			WHERE l.user_id = ? AND l.method = '` + store.MethodWebAuthn + `'`
	}
	q.userList = newUserListQueries(d)
	if d == Postgres {
		q.rebind()
	}
	q.roles = newRoleQueries(d)
	q.tenants = newTenantQueries(d)
	return q
}

// rebind turns ? placeholders into PostgreSQL's $1, $2, ...
func (q *queries) rebind() {
	for _, p := range []*string{
		&q.insertUser, &q.userByID, &q.userExists,
		&q.loginsByEmail, &q.loginForUpdate, &q.updateLoginEmail,
		&q.insertLogin, &q.login, &q.userLogins, &q.userByLogin, &q.passwordLogin, &q.passwordLoginExists, &q.updatePassword, &q.setPassword,
		&q.insertSession, &q.session, &q.userSessions,
		&q.rotateCurrent, &q.rotatedSession, &q.rotateCurrentRoles, &q.rotatedSessionRoles, &q.legacyToken, &q.sessionForUpdate, &q.rotate, &q.endTheft,
		&q.endSession, &q.endLoginSessions, &q.userHandlesForUpdate, &q.endUserSessions, &q.deleteUserTokens, &q.deleteUserSessions, &q.endEpoch,
		&q.userForUpdate, &q.banUser, &q.unbanUser,
		&q.insertCode, &q.code, &q.resetUser, &q.resetForUpdate, &q.deleteUserResets,
		&q.passwordForUpdate, &q.dropPasskeyCodes, &q.dropPasskeys,
		&q.loginByID, &q.loginByIDForUpdate, &q.loginUser, &q.loginIDTaken, &q.ownerOf, &q.claimEmail, &q.setVerified, &q.releaseEmail, &q.verifyEmail,
		&q.otherWaysIn, &q.loginHandlesForUpdate, &q.deleteLogin, &q.deleteUserLogins,
		&q.deleteUserCodes, &q.deleteUser, &q.deleteLoginVerifications,
		&q.verificationUser, &q.verificationForUpdate,
		&q.flowForUpdate, &q.addressFlowsForUpdate, &q.countAttempt,
		&q.ceremonyForUpdate, &q.recoveriesForUpdate, &q.setMaterial, &q.deleteCode, &q.deleteAddressRecoveries,
		&q.codeUser, &q.codeForUpdate, &q.addressLoginsForUpdate, &q.addressHeldByOther, &q.moveLogin, &q.deleteUserKind,
		&q.deleteLoginCodes,
		&q.swapMaterial, &q.swapMaterialFromNone, &q.swapFactors, &q.swapFactorsFromNone,
		&q.signingKeys, &q.insertKey,
		&q.deleteExpiredSessionTokens, &q.deleteExpiredSessions, &q.deleteExpiredTokens,
		&q.deleteExpiredCodes, &q.deleteExpiredKeys, &q.deleteExpiredLimits,
		&q.rateLimit, &q.takeRateLimit, &q.refundRateLimit, &q.resetRateLimit,
	} {
		*p = rebindQuery(*p)
	}
	for i := range q.userList.list {
		q.userList.list[i] = rebindQuery(q.userList.list[i])
	}
	for i := range q.userList.count {
		q.userList.count[i] = rebindQuery(q.userList.count[i])
	}
}

// rebindQuery turns the ? placeholders of query into PostgreSQL's $1, $2, ...
func rebindQuery(query string) string {
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
