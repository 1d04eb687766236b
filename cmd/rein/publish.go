package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

func init() { register(newPublishCmd) }

// publishLine is one line of a `rein publish --file` JSONL file.
type publishLine struct {
	Tenant       string `json:"tenant"`
	Conversation string `json:"conversation"`
	Role         string `json:"role"`
	Text         string `json:"text"`
	Turn         int    `json:"turn"`
}

func newPublishCmd() *cobra.Command {
	var nf natsFlags
	var one publishLine
	var file string
	cmd := &cobra.Command{
		Use:   "publish",
		Short: "Publish dialogue turns to a running rein (one from flags, or many from a JSONL file)",
		Long: `publish stores turns on rein.turns.<tenant>.<conversation>.<role> as dev.rein.turn.v1 CloudEvents and
prints the stream sequence of each.

One turn:   rein publish --tenant acme --conversation c1 --text "cancel that one"
Many turns: rein publish --file turns.jsonl   (each line {"tenant","conversation","role","text","turn"})

--turn defaults to the conversation's next user turn (the agent's reply carries its user turn's
number). Event ids are deterministic (turn-<tenant>-<conv>-<turn>-<role>), so publishing the same
turn twice stores it once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applySources(cmd, nil); err != nil {
				return err
			}
			var lines []publishLine
			if file != "" {
				var err error
				if lines, err = readPublishFile(file); err != nil {
					return err
				}
			} else {
				if one.Tenant == "" || one.Conversation == "" || one.Text == "" {
					return errors.New("publish needs --tenant, --conversation and --text, or --file")
				}
				lines = []publishLine{one}
			}
			nc, js, err := connectJS(&nf, "rein-publish")
			if err != nil {
				return err
			}
			defer nc.Close()
			return publishLines(cmd.Context(), js, lines, cmd.OutOrStdout())
		},
	}
	nf.bind(cmd, streams.DefaultURL)
	fs := cmd.Flags()
	fs.StringVar(&one.Tenant, "tenant", "", "tenant id ([A-Za-z0-9_-]{1,128})")
	fs.StringVar(&one.Conversation, "conversation", "", "conversation id ([A-Za-z0-9_-]{1,128})")
	fs.StringVar(&one.Role, "role", schemas.RoleUser, "user or agent")
	fs.StringVar(&one.Text, "text", "", "what was said")
	fs.IntVar(&one.Turn, "turn", 0, "turn number (default: the conversation's next)")
	fs.StringVar(&file, "file", "", "JSONL file of turns ('-' for stdin)")
	return cmd
}

func readPublishFile(path string) ([]publishLine, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	var out []publishLine
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var l publishLine
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		if l.Role == "" {
			l.Role = schemas.RoleUser
		}
		out = append(out, l)
	}
	return out, sc.Err()
}

// publishLines numbers, validates and stores turns, printing one sequence
// per line.
func publishLines(ctx context.Context, js jetstream.JetStream, lines []publishLine, w io.Writer) error {
	pub := streams.NewPublisher(js, nil)
	stream, err := js.Stream(ctx, streams.StreamTurns)
	if err != nil {
		return fmt.Errorf("is rein running? %w", err)
	}
	lastUser := map[string]int{}
	for i, l := range lines {
		if err := schemas.CheckIDs(l.Tenant, l.Conversation); err != nil {
			return fmt.Errorf("turn %d: %w", i+1, err)
		}
		key := streams.ConversationKey(l.Tenant, l.Conversation)
		if _, ok := lastUser[key]; !ok {
			lastUser[key] = lastTurn(ctx, stream, l.Tenant, l.Conversation)
		}
		if l.Turn == 0 {
			l.Turn = lastUser[key]
			if l.Role == schemas.RoleUser {
				l.Turn++
			}
		}
		if l.Role == schemas.RoleUser {
			lastUser[key] = max(lastUser[key], l.Turn)
		}
		id := schemas.EventID("turn", l.Tenant, l.Conversation, l.Turn) + "-" + l.Role
		ev, err := schemas.NewEvent(schemas.TypeTurn, id, "/rein/publish",
			schemas.Meta{Tenant: l.Tenant, Conversation: l.Conversation, Turn: l.Turn},
			schemas.Turn{Role: l.Role, Text: l.Text, Turn: l.Turn})
		if err != nil {
			return fmt.Errorf("turn %d: %w", i+1, err)
		}
		seq, err := pub.Publish(ctx, streams.StreamTurns, streams.TurnSubject(l.Tenant, l.Conversation, l.Role), &ev)
		if err != nil {
			return fmt.Errorf("turn %d: %w", i+1, err)
		}
		fmt.Fprintf(w, "%d\n", seq)
	}
	return nil
}

// lastTurn is the turn number of the conversation's latest user turn (0
// when it has none).
func lastTurn(ctx context.Context, s jetstream.Stream, tenant, conv string) int {
	m, err := s.GetLastMsgForSubject(ctx, streams.TurnSubject(tenant, conv, schemas.RoleUser))
	if err != nil {
		return 0
	}
	var t schemas.Turn
	if json.Unmarshal(m.Data, &t) != nil {
		return 0
	}
	return t.Turn
}
