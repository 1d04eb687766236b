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
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
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
	var continueOnError, nextTurn bool
	var badLines int
	cmd := &cobra.Command{
		Use:   "publish",
		Short: "Publish dialogue turns to a running rein (one from flags, or many from a JSONL file)",
		Long: `publish stores turns on rein.turns.<tenant>.<conversation>.<role> as dev.rein.turn.v1 CloudEvents and
prints the stream sequence of each ("<seq> duplicate" for a turn stored before).

One turn:   rein publish --tenant acme --conversation c1 --turn 1 --text "cancel that one"
Many turns: rein publish --file turns.jsonl   (each line {"tenant","conversation","role","text","turn"})

A turn's text is valid UTF-8 (anything else is refused, never rewritten) of at most 65,536
characters, and the whole event at most the server's --max-event-bytes (256 KiB by default).

One turn: give --turn N, so that running the command again stores nothing twice, or --next-turn
for the conversation's next user turn (a new turn every run; the agent's reply carries its user
turn's number).

A file is all or nothing: every line is checked first and every bad line reported (line number,
field, reason); nothing is published unless all are good (--continue-on-error publishes the good
lines and lists the bad). In a file, a line without "turn" is numbered from the file itself — the
k-th user line of a conversation is turn k, an agent line takes its user turn's number — so running
the same file again publishes nothing twice (give turns explicitly to continue a conversation
stored before).

What the stream deduplicates on is derived from tenant, conversation, turn and role, so the same
turn published twice is stored once and reported as a duplicate; the same turn number with other
text is a conflict: refused, dead-lettered (conflicting_duplicate) and reported.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applySources(cmd, nil); err != nil {
				return err
			}
			var lines []publishLine
			if file != "" {
				var bad []lineError
				var err error
				if lines, bad, err = readPublishFile(file); err != nil {
					return err
				}
				badLines = len(bad)
				if len(bad) > 0 {
					for _, b := range bad {
						fmt.Fprintln(cmd.ErrOrStderr(), b.Error())
					}
					if !continueOnError {
						return fmt.Errorf("%s: %d bad line(s); nothing published (fix them, or --continue-on-error to publish the %d good ones)", file, len(bad), len(lines))
					}
				}
			} else {
				if one.Tenant == "" || one.Conversation == "" || one.Text == "" {
					return errors.New("publish needs --tenant, --conversation and --text, or --file")
				}
				switch turnSet := cmd.Flags().Changed("turn"); {
				case turnSet && nextTurn:
					return errors.New("give --turn N or --next-turn, not both")
				case !turnSet && !nextTurn:
					return errors.New("publish needs --turn N (the same turn published again is then stored once) or --next-turn (the conversation's next turn: a new turn every run)")
				case turnSet && one.Turn < 1:
					return fmt.Errorf("--turn %d: turn numbers start at 1 (or --next-turn for the conversation's next turn)", one.Turn)
				}
				if err := one.check(); err != nil {
					var le lineError
					if errors.As(err, &le) && le.field != "" {
						// One turn from flags: name the flag, not a line.
						return fmt.Errorf("--%s: %s", le.field, le.reason)
					}
					return err
				}
				lines = []publishLine{one}
			}
			nc, js, err := connectJS(&nf, "rein-publish")
			if err != nil {
				return err
			}
			defer nc.Close()
			if err := publishLines(cmd.Context(), js, lines, cmd.OutOrStdout()); err != nil {
				return err
			}
			if badLines > 0 {
				// Reported above; the command still fails so that a script
				// notices them.
				return fmt.Errorf("%s: %d bad line(s) not published", file, badLines)
			}
			return nil
		},
	}
	nf.bind(cmd, natsserver.DefaultURL)
	fs := cmd.Flags()
	fs.StringVar(&one.Tenant, "tenant", "", "tenant id ([A-Za-z0-9_-]{1,128})")
	fs.StringVar(&one.Conversation, "conversation", "", "conversation id ([A-Za-z0-9_-]{1,128})")
	fs.StringVar(&one.Role, "role", schemas.RoleUser, "user or agent")
	fs.StringVar(&one.Text, "text", "", "what was said")
	fs.IntVar(&one.Turn, "turn", 0, "turn number; publishing the same turn again stores it once (one of --turn or --next-turn is needed)")
	fs.BoolVar(&nextTurn, "next-turn", false, "number the turn as the conversation's next (a new turn every run)")
	fs.StringVar(&file, "file", "", "JSONL file of turns ('-' for stdin)")
	fs.BoolVar(&continueOnError, "continue-on-error", false, "with --file: publish the good lines even when some are bad (the bad are listed, and the command exits non-zero)")
	return cmd
}

// lineError is a bad line of a publish file, in plain words.
type lineError struct {
	line   int
	field  string
	reason string
}

func (e lineError) Error() string {
	if e.field == "" {
		return fmt.Sprintf("line %d: %s", e.line, e.reason)
	}
	return fmt.Sprintf("line %d: field %q: %s", e.line, e.field, e.reason)
}

// check validates a line's fields; the error names the field.
func (l publishLine) check() error {
	switch {
	case !schemas.ValidID(l.Tenant):
		return lineError{field: "tenant", reason: "must be 1 to 128 letters, digits, '_' or '-'"}
	case !schemas.ValidID(l.Conversation):
		return lineError{field: "conversation", reason: "must be 1 to 128 letters, digits, '_' or '-'"}
	case l.Role != schemas.RoleUser && l.Role != schemas.RoleAgent:
		return lineError{field: "role", reason: fmt.Sprintf("must be %q or %q, not %q", schemas.RoleUser, schemas.RoleAgent, l.Role)}
	case strings.TrimSpace(l.Text) == "":
		return lineError{field: "text", reason: "must not be empty"}
	case !utf8.ValidString(l.Text):
		return lineError{field: "text", reason: "is not valid UTF-8 (rein never rewrites what a user said)"}
	case utf8.RuneCountInString(l.Text) > schemas.MaxTextChars:
		return lineError{field: "text", reason: fmt.Sprintf("is %d characters long; a turn's text is at most %d", utf8.RuneCountInString(l.Text), schemas.MaxTextChars)}
	case l.Turn < 0 || l.Turn > schemas.MaxTurn:
		return lineError{field: "turn", reason: fmt.Sprintf("must be a number from 1 to %d (or left out)", schemas.MaxTurn)}
	}
	return nil
}

// readPublishFile reads and checks every line of a publish file. Good lines
// come back numbered (see numberFileLines); every bad line is reported.
func readPublishFile(path string) ([]publishLine, []lineError, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		r = f
	}
	var out []publishLine
	var bad []lineError
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		if !utf8.Valid(sc.Bytes()) {
			// The JSON decoder would turn the bad bytes into U+FFFD: a
			// turn is stored as said or not at all.
			bad = append(bad, lineError{line: n, reason: "is not valid UTF-8 (rein never rewrites what a user said)"})
			continue
		}
		var l publishLine
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			bad = append(bad, plainJSONError(n, err))
			continue
		}
		if l.Role == "" {
			l.Role = schemas.RoleUser
		}
		if err := l.check(); err != nil {
			var le lineError
			if !errors.As(err, &le) {
				le.reason = err.Error()
			}
			le.line = n
			bad = append(bad, le)
			continue
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return numberFileLines(out), bad, nil
}

// numberFileLines gives each line without a turn its number from the file:
// a user line the conversation's previous user turn in the file + 1, an
// agent line that of its user turn.
func numberFileLines(lines []publishLine) []publishLine {
	last := map[string]int{}
	for i, l := range lines {
		key := bus.ConversationKey(l.Tenant, l.Conversation)
		if l.Turn == 0 {
			l.Turn = last[key]
			if l.Role == schemas.RoleUser {
				l.Turn++
			}
			if l.Turn == 0 {
				l.Turn = 1 // an agent line before any user line
			}
		}
		if l.Role == schemas.RoleUser {
			last[key] = max(last[key], l.Turn)
		}
		lines[i] = l
	}
	return lines
}

// plainJSONError says what is wrong with a line that is not the JSON
// object expected, without Go's decoder wording.
func plainJSONError(line int, err error) lineError {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return lineError{line: line, reason: fmt.Sprintf("not valid JSON (at character %d)", syn.Offset)}
	case errors.As(err, &typ):
		want := map[string]string{"string": "text in quotes", "int": "a whole number"}[typ.Type.Kind().String()]
		if want == "" {
			want = typ.Type.String()
		}
		return lineError{line: line, field: typ.Field, reason: fmt.Sprintf("must be %s, not a JSON %s", want, typ.Value)}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return lineError{line: line, field: name, reason: `is not a field of a turn (tenant, conversation, role, text, turn)`}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return lineError{line: line, reason: "the JSON object is cut short"}
	}
	return lineError{line: line, reason: "not a JSON object of a turn"}
}

// publishLines stores turns, printing one sequence per line ("<seq>
// duplicate" for a turn stored before). A line without a turn (one turn
// from flags) becomes the conversation's next. Conflicts are reported and
// the others still published; the error then counts them.
func publishLines(ctx context.Context, js jetstream.JetStream, lines []publishLine, w io.Writer) error {
	pub := streams.NewPublisher(js, nil, streams.PublisherConfig{})
	stream, err := streams.LookupStream(ctx, js, bus.StreamTurns, streams.DefaultRetryFor)
	if err != nil {
		return fmt.Errorf("is rein running (its streams provisioned) and, on a cluster, does REIN_TURNS have a leader? %w", err)
	}
	lastUser := map[string]int{}
	var conflicts []string
	for i, l := range lines {
		key := bus.ConversationKey(l.Tenant, l.Conversation)
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
		id := schemas.TurnMsgID(l.Tenant, l.Conversation, l.Turn, l.Role)
		ev, err := schemas.NewEvent(schemas.TypeTurn, id, "/rein/publish",
			schemas.Meta{Tenant: l.Tenant, Conversation: l.Conversation, Turn: l.Turn},
			schemas.Turn{Role: l.Role, Text: l.Text, Turn: l.Turn})
		if err != nil {
			return fmt.Errorf("turn %d: %w", i+1, err)
		}
		msg, err := streams.Encode(bus.TurnSubject(l.Tenant, l.Conversation, l.Role), &ev)
		if err != nil {
			return fmt.Errorf("turn %d: %w", i+1, err)
		}
		res, err := streams.PublishTurn(ctx, pub, msg)
		switch {
		case streams.IsConflict(err):
			conflicts = append(conflicts, err.Error())
			fmt.Fprintf(w, "conflict %s\n", err)
		case err != nil:
			return fmt.Errorf("turn %d: %w", i+1, err)
		case res.Duplicate:
			fmt.Fprintf(w, "%d duplicate\n", res.Sequence)
		default:
			fmt.Fprintf(w, "%d\n", res.Sequence)
		}
	}
	if len(conflicts) > 0 {
		return fmt.Errorf("%d turn(s) conflict with turns stored before under the same number (dead-lettered): %s", len(conflicts), conflicts[0])
	}
	return nil
}

// lastTurn is the turn number of the conversation's latest user turn (0
// when it has none).
func lastTurn(ctx context.Context, s jetstream.Stream, tenant, conv string) int {
	m, err := s.GetLastMsgForSubject(ctx, streams.StoredSubject(s, bus.TurnSubject(tenant, conv, schemas.RoleUser)))
	if err != nil {
		return 0
	}
	var t schemas.Turn
	if json.Unmarshal(m.Data, &t) != nil {
		return 0
	}
	return t.Turn
}
