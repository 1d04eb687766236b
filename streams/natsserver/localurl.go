package natsserver

import (
	"os"
	"path/filepath"
	"strings"
)

// localURLFile is where rein serve writes the client URL of its embedded
// NATS server, so that client commands given the same --data-dir need no
// --nats-url (as the admin key is found there too).
const localURLFile = "nats-url"

// WriteLocalURL records the embedded server's client URL in dataDir.
func WriteLocalURL(dataDir, url string) error {
	return os.WriteFile(filepath.Join(dataDir, localURLFile), []byte(url+"\n"), 0o600)
}

// LocalURL is the client URL the last rein serve on dataDir recorded, if
// any. The server may have stopped since: a connection error then says
// where the URL came from.
func LocalURL(dataDir string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(dataDir, localURLFile))
	if err != nil {
		return "", false
	}
	u := strings.TrimSpace(string(b))
	return u, u != ""
}
