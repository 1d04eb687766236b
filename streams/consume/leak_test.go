package consume_test

import (
	"testing"

	rtest "github.com/reinception/rein/internal/testutil"
)

// Every goroutine the package's tests start stops by the end of the run.
func TestMain(m *testing.M) { rtest.VerifyNoLeaks(m) }
