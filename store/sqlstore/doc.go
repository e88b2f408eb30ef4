// Package sqlstore is a store.Store over database/sql for PostgreSQL,
// SQLite and MySQL or MariaDB. These three are tested; other databases that
// speak one of the dialects are not.
//
// It takes a *sql.DB and imports no driver: the application chooses one
// (pgx's stdlib, a pure-Go SQLite such as modernc.org/sqlite,
// go-sql-driver/mysql) and opens the database:
//
//	db, err := sql.Open("pgx", os.Getenv("DATABASE_URL"))
//	if err != nil {
//		log.Fatal(err)
//	}
//	st, err := sqlstore.New(db, sqlstore.Postgres)
//	if err != nil {
//		log.Fatal(err)
//	}
//	if err := st.Migrate(ctx); err != nil { // creates or upgrades the auth_* tables
//		log.Fatal(err)
//	}
//	a, err := auth.New(auth.Config{Store: st})
//
// Every method that changes more than one row runs in one transaction, and
// every write commits before the method returns: after a crash (even kill
// -9) following an answer of the auth handler, the database holds what the
// answer promised. Times are stored as milliseconds since the Unix epoch.
//
// # Migrations
//
// The schema is embedded and versioned (the files under migrations/).
// Migrate applies the missing versions and records them in
// auth_schema_migrations; instances starting together may all call it (a
// database lock lets one apply each step). Applications that run
// migrations with their own tool take the files from Migrations instead, in
// order, and record the versions the same way.
//
// # Many instances on PostgreSQL
//
// Run as many application instances as you like against one database, each
// with its own *sql.DB. Signing keys live in the database, so a token signed
// by one instance verifies on all, and keys rotate for all. Use the same
// auth.Config.Issuer everywhere.
//
// A refresh is one UPDATE ... RETURNING round trip in the common case,
// which also returns the user's roles and permissions when the roles
// recipe asks for them (store.Rotation.RolesOf), and the session row it
// rewrites is updated in place: none of the columns it
// changes is indexed, so PostgreSQL makes it a heap-only update, which
// leaves no index entries and no dead index tuples for vacuum to chase.
// Concurrent refreshes of one token, on any instances, leave at most one
// lineage, and theft is detected whichever instance sees the replay.
//
// # Connection pool
//
// New sets up a pool that sql.Open left unbounded (an application that
// called SetMaxOpenConns before New keeps its pool as it set it): at most
// DefaultMaxOpenConns (9) connections, opened as the load needs them, each
// closed after DefaultConnMaxIdleTime (30 seconds) unused. database/sql
// hands out the connection given back last, so a load that one connection
// serves keeps one; the others a burst opened go half a minute after it,
// and an instance that serves nothing holds none. A statement of the
// store holds its connection for well under a millisecond: nine serve a
// busy instance, and requests beyond them wait for one, up to their
// context's deadline. Ten instances then hold at most 90 PostgreSQL
// connections however hard a burst presses, within PostgreSQL's default
// max_connections of 100, less the 3 it reserves for superusers.
//
// The settings an operator may change, on the *sql.DB after New, or before
// it with SetMaxOpenConns among them:
//
//   - SetMaxOpenConns, the bound: the sum over all instances, with what
//     else connects (migrations, consoles, other services), must stay under
//     the server's max_connections less its reserved ones; with more
//     instances, bound each lower, raise max_connections, or put PgBouncer
//     in front (below). More connections than the database server has
//     cores to run them seldom serve more requests. db.Stats().WaitCount
//     and WaitDuration tell how often and how long requests waited at the
//     bound.
//   - SetMaxIdleConns: keep it at the bound (New does). Below it, a steady
//     load whose concurrency rises and falls closes connections as it
//     gives them back and opens them again a moment later, a new
//     PostgreSQL process each time. On two cores, sixteen clients
//     refreshing sessions for five seconds made some 500 connections with
//     2 kept idle of 9, against 27 with 9, and PostgreSQL spent over twice
//     the CPU per refresh. db.Stats().MaxIdleClosed counts the
//     connections closed so.
//   - SetConnMaxIdleTime: how long connections a burst opened outlive it.
//     Shorter gives the server its connections back sooner; the first
//     request after a quiet spell then waits for a new connection (a TCP
//     and TLS handshake, authentication and, on PostgreSQL, a new server
//     process: milliseconds on one machine, tens across a region).
//   - SetConnMaxLifetime, which New leaves unset: set it (minutes) where
//     connections must move on by themselves, to a new primary after a
//     failover behind a DNS name or across replicas behind a load
//     balancer; and keep ConnMaxIdleTime under the idle timeout of any
//     proxy or firewall on the way, which drops connections silently.
//
// # PgBouncer and other transaction-pooling proxies
//
// Behind PgBouncer in transaction mode (as Supabase, Neon and RDS Proxy
// run it) each transaction may get another server connection. The store
// keeps nothing on a connection beyond a transaction (its migration lock
// is transaction-scoped), but pgx by default prepares each statement
// once per connection and reuses it, which fails there with "prepared
// statement ... already exists" (SQLSTATE 42P05). Add
// default_query_exec_mode=exec to pgx's DSN:
//
//	postgres://app@pgbouncer:6432/app?default_query_exec_mode=exec
//
// Each statement then goes in one round trip without a named prepared
// statement. Every pool through the proxy needs it, a short-lived one
// that checks something at start-up too: a statement pgx prepares by
// name stays on the server connection, which PgBouncer keeps when the
// process exits, and the same statement from the next process to get
// that connection fails. PgBouncer 1.21 and later can instead keep
// prepared statements itself (max_prepared_statements).
//
// # Outages
//
// When the database cannot be reached (connections refused or reset, a
// PostgreSQL restart, too many connections), methods return errors that
// match store.ErrUnavailable, which the auth handler answers 503 with
// Retry-After, issuing no tokens. The store needs no restart: database/sql
// replaces broken connections as the database comes back.
//
// # SQLite
//
// Open the file in WAL mode with a busy timeout, for example with
// modernc.org/sqlite:
//
//	file:auth.db?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)
//
// SQLite has one writer at a time. The store queues its writes itself,
// one after the other, while reads go on beside them on the pool's other
// connections: a write starts the moment the one before it commits,
// rather than when SQLite's busy handler, which polls with sleeps of up
// to 100 ms, next looks. The single-statement writes that queue while
// another holds the writer (refresh-token rotations, new sessions,
// revocations, rate-limit counts) commit together in one transaction, one
// sync of the log for all, each inside a savepoint: one that fails
// changes nothing and the others commit, and none is answered before the
// commit. If the transaction cannot commit, or a savepoint cannot be
// released or rolled back to, none commits and each is answered with an
// error. Write transactions begin IMMEDIATE, so a
// writer from outside the store (another process) makes them wait on the
// busy timeout instead of failing with SQLITE_BUSY.
//
// synchronous(FULL) makes each commit survive a power cut; NORMAL survives
// a crash of the process only, for faster writes. Prefer FULL: an auth
// store that loses its last commits forgets sign-ups it confirmed, and
// resurrects refresh tokens it had rotated away, so a thief's replay of one
// would succeed instead of revoking the session. NORMAL is a reasonable
// choice only where the machine cannot lose power without losing the disk
// too.
//
// # MySQL and MariaDB
//
// Keys are VARBINARY, with a binary collation, so emails compare byte for
// byte; the library normalises them before they reach the store. Add
// interpolateParams=true to the go-sql-driver DSN to save a round trip per
// statement.
//
// # Clean-up
//
// Call DeleteExpired on a schedule (hourly or daily); correctness never
// depends on it, only table size. On PostgreSQL it scans the sessions
// table, whose expiry is not indexed so that refreshes stay cheap: do not
// run it per request.
package sqlstore
