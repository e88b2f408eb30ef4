//go:build race

package auth_test

// raceEnabled tells tests whose run time grows steeply under the race
// detector to do a smaller share of their work.
const raceEnabled = true
