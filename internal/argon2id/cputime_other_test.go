//go:build !unix

package argon2id

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
