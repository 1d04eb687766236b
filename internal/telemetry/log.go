package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// NewLogger returns a JSON slog logger at the given level (debug, info,
// warn, error).
func NewLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	switch strings.ToLower(level) {
	case "debug":
		l = slog.LevelDebug
	case "", "info":
		l = slog.LevelInfo
	case "warn", "warning":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l, ReplaceAttr: humanDurations})), nil
}

// NewLoggerFormat is NewLogger in a format: "json" (one object a line,
// for collectors) or "text" (key=value, for people at a terminal).
func NewLoggerFormat(w io.Writer, level, format string) (*slog.Logger, error) {
	l, err := NewLogger(w, level)
	if err != nil {
		return nil, err
	}
	switch strings.ToLower(format) {
	case "", "json":
		return l, nil
	case "text":
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: levelOf(l), ReplaceAttr: humanDurations})), nil
	default:
		return nil, fmt.Errorf("log format %q: want json or text", format)
	}
}

// levelOf is the lowest level l logs.
func levelOf(l *slog.Logger) slog.Level {
	for _, lv := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn} {
		if l.Enabled(context.Background(), lv) {
			return lv
		}
	}
	return slog.LevelError
}

// humanDurations writes durations as Go prints them ("1.5s", "250ms")
// rather than as slog's JSON handler does, integer nanoseconds.
func humanDurations(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}
