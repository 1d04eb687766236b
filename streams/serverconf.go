package streams

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
)

// WriteAuthorization writes a nats-server configuration block giving the
// keyring's identities their permissions (the same table the embedded
// server uses), for an external cluster: include it from the cluster's
// configuration (an `include` of this file at the top level, or paste it
// into an account's users), and give each rein process its identity's seed
// file with --nats-nkey.
func (k *Keyring) WriteAuthorization(w io.Writer) error {
	users, err := k.Users()
	if err != nil {
		return err
	}
	names := k.Names()
	var b strings.Builder
	b.WriteString("# rein's NATS identities and permissions (rein keys server-config).\n")
	b.WriteString("# Generated from streams/permissions.go; regenerate after upgrading rein.\n")
	b.WriteString("authorization {\n  users = [\n")
	for i, u := range users {
		fmt.Fprintf(&b, "    # %s\n    {\n      nkey: %s\n      permissions: {\n", names[i], u.Nkey)
		writeSubjects(&b, "publish", u.Permissions.Publish)
		writeSubjects(&b, "subscribe", u.Permissions.Subscribe)
		if r := u.Permissions.Response; r != nil {
			fmt.Fprintf(&b, "        allow_responses: { max: %d }\n", r.MaxMsgs)
		}
		b.WriteString("      }\n    }\n")
	}
	b.WriteString("  ]\n}\n")
	_, err = io.WriteString(w, b.String())
	return err
}

func writeSubjects(b *strings.Builder, kind string, p *server.SubjectPermission) {
	if p == nil || (len(p.Allow) == 0 && len(p.Deny) == 0) {
		return
	}
	fmt.Fprintf(b, "        %s: {\n", kind)
	for _, l := range []struct {
		name string
		subs []string
	}{{"allow", p.Allow}, {"deny", p.Deny}} {
		if len(l.subs) == 0 {
			continue
		}
		q := make([]string, len(l.subs))
		for i, s := range l.subs {
			q[i] = strconv.Quote(s)
		}
		fmt.Fprintf(b, "          %s: [%s]\n", l.name, strings.Join(q, ", "))
	}
	b.WriteString("        }\n")
}
