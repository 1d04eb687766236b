package natsserver

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/nats-io/nats-server/v2/server"
)

// authUser is one user of the authorization a deployment gives an
// external nats-server: an identity's public key and permissions, in the
// shape of nats-server's configuration (which both WriteAuthorization's
// block and WriteHelmValues's YAML follow). It never holds a seed.
type authUser struct {
	identity    string
	Nkey        string    `yaml:"nkey"`
	Permissions authPerms `yaml:"permissions"`
}

type authPerms struct {
	Publish        *authSubjects  `yaml:"publish,omitempty"`
	Subscribe      *authSubjects  `yaml:"subscribe,omitempty"`
	AllowResponses *authResponses `yaml:"allow_responses,omitempty"`
}

type authSubjects struct {
	Allow []string `yaml:"allow,omitempty"`
	Deny  []string `yaml:"deny,omitempty"`
}

type authResponses struct {
	Max int `yaml:"max"`
}

// authUsers lists the keyring's identities (Names) with their public keys
// and the permissions the embedded server gives them (Users).
func (k *Keyring) authUsers() ([]authUser, error) {
	users, err := k.Users()
	if err != nil {
		return nil, err
	}
	names := k.Names()
	if len(names) != len(users) {
		return nil, fmt.Errorf("keyring: %d identities but %d users", len(names), len(users))
	}
	out := make([]authUser, len(users))
	for i, u := range users {
		out[i] = authUser{identity: names[i], Nkey: u.Nkey}
		if p := u.Permissions; p != nil {
			out[i].Permissions = authPerms{Publish: subjects(p.Publish), Subscribe: subjects(p.Subscribe)}
			if p.Response != nil {
				out[i].Permissions.AllowResponses = &authResponses{Max: p.Response.MaxMsgs}
			}
		}
	}
	return out, nil
}

func subjects(p *server.SubjectPermission) *authSubjects {
	if p == nil || (len(p.Allow) == 0 && len(p.Deny) == 0) {
		return nil
	}
	return &authSubjects{Allow: p.Allow, Deny: p.Deny}
}

// WriteAuthorization writes a nats-server configuration block giving the
// keyring's identities their permissions (the same table the embedded
// server uses), for an external cluster: include it from the cluster's
// configuration (an `include` of this file at the top level, or paste it
// into an account's users), and give each rein process its identity's seed
// file (serve --nats-keys-dir).
func (k *Keyring) WriteAuthorization(w io.Writer) error {
	users, err := k.authUsers()
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# rein's NATS identities and permissions (rein keys server-config).\n")
	b.WriteString("# Generated from streams/permissions.go; regenerate after upgrading rein.\n")
	b.WriteString("authorization {\n  users = [\n")
	for _, u := range users {
		fmt.Fprintf(&b, "    # %s\n    {\n      nkey: %s\n      permissions: {\n", u.identity, u.Nkey)
		p := u.Permissions
		writeSubjects(&b, "publish", p.Publish)
		writeSubjects(&b, "subscribe", p.Subscribe)
		if p.AllowResponses != nil {
			fmt.Fprintf(&b, "        allow_responses: { max: %d }\n", p.AllowResponses.Max)
		}
		b.WriteString("      }\n    }\n")
	}
	b.WriteString("  ]\n}\n")
	_, err = io.WriteString(w, b.String())
	return err
}

func writeSubjects(b *strings.Builder, kind string, s *authSubjects) {
	if s == nil {
		return
	}
	fmt.Fprintf(b, "        %s: {\n", kind)
	for _, l := range []struct {
		name string
		subs []string
	}{{"allow", s.Allow}, {"deny", s.Deny}} {
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

// WriteHelmValues writes the same users and permissions as
// WriteAuthorization as a values file of the official NATS Helm chart
// (config.merge.authorization.users), to pass after the deployment's own
// values: helm install … -f nats-values.yaml -f rein-auth-values.yaml.
// Each user carries a comment naming its identity.
func (k *Keyring) WriteHelmValues(w io.Writer) error {
	users, err := k.authUsers()
	if err != nil {
		return err
	}
	type values struct {
		Config struct {
			Merge struct {
				Authorization struct {
					Users []authUser `yaml:"users"`
				} `yaml:"authorization"`
			} `yaml:"merge"`
		} `yaml:"config"`
	}
	var v values
	v.Config.Merge.Authorization.Users = users
	comments := yaml.CommentMap{}
	for i, u := range users {
		comments[fmt.Sprintf("$.config.merge.authorization.users[%d]", i)] = []*yaml.Comment{yaml.HeadComment(" " + u.identity)}
	}
	out, err := yaml.MarshalWithOptions(v, yaml.WithComment(comments), yaml.IndentSequence(true))
	if err != nil {
		return fmt.Errorf("helm values: %w", err)
	}
	head := "# rein's NATS identities and permissions for the official NATS Helm chart\n" +
		"# (rein keys server-config --helm-values). Public keys only; the seeds stay\n" +
		"# in the keys directory. Generated from streams/permissions.go; regenerate\n" +
		"# after upgrading rein.\n"
	_, err = io.WriteString(w, head+string(out))
	return err
}
