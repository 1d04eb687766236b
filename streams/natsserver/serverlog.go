package natsserver

import (
	"context"
	"fmt"
	"log/slog"
)

// serverLog hands the embedded nats-server's own log lines to rein's
// logger, marked component=nats-server: its warnings and errors at those
// levels (an authentication failure, a slow consumer, a store that cannot
// write), its notices (the start-up banner, stream recovery) at debug.
// Its debug and trace lines are never enabled.
type serverLog struct{ l *slog.Logger }

func (s serverLog) log(level slog.Level, format string, v []any) {
	s.l.Log(context.Background(), level, fmt.Sprintf(format, v...), "component", "nats-server")
}

func (s serverLog) Noticef(format string, v ...any) { s.log(slog.LevelDebug, format, v) }
func (s serverLog) Warnf(format string, v ...any)   { s.log(slog.LevelWarn, format, v) }
func (s serverLog) Errorf(format string, v ...any)  { s.log(slog.LevelError, format, v) }
func (s serverLog) Fatalf(format string, v ...any)  { s.log(slog.LevelError, format, v) }
func (s serverLog) Debugf(format string, v ...any)  { s.log(slog.LevelDebug, format, v) }
func (s serverLog) Tracef(format string, v ...any)  { s.log(slog.LevelDebug-4, format, v) }
