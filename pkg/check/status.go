package check

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jetctl/jetctl/pkg/consumer"
)

// Status is the verdict on one check, one stream or consumer, or the whole
// run. Its value is the nagios plugin exit code: 0 OK, 1 WARNING, 2
// CRITICAL, 3 UNKNOWN.
type Status int

// The statuses, by their nagios codes.
const (
	OK       Status = 0
	Warning  Status = 1
	Critical Status = 2
	Unknown  Status = 3
)

// rank orders statuses from best to worst: OK, WARNING, UNKNOWN,
// CRITICAL. Something that could not be judged may be critical, so it
// outranks a warning; it never hides a critical.
var rank = map[Status]int{OK: 0, Warning: 1, Unknown: 2, Critical: 3}

// Worse reports whether s is worse than o.
func (s Status) Worse(o Status) bool { return rank[s] > rank[o] }

// Worst is the worst of the statuses (OK for none).
func Worst(statuses ...Status) Status {
	w := OK
	for _, s := range statuses {
		if s.Worse(w) {
			w = s
		}
	}
	return w
}

// String is the status in lower case, as JSON has it: ok, warning,
// critical, unknown.
func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case Warning:
		return "warning"
	case Critical:
		return "critical"
	}
	return "unknown"
}

// Nagios is the status as a nagios plugin prints it: OK, WARNING,
// CRITICAL, UNKNOWN.
func (s Status) Nagios() string { return strings.ToUpper(s.String()) }

// MarshalJSON writes the lower-case word.
func (s Status) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads the lower-case word.
func (s *Status) UnmarshalJSON(data []byte) error {
	var word string
	if err := json.Unmarshal(data, &word); err != nil {
		return err
	}
	for _, c := range []Status{OK, Warning, Critical, Unknown} {
		if c.String() == word {
			*s = c
			return nil
		}
	}
	return fmt.Errorf("unknown status %q", word)
}

// OfSeverity is the status the health model's severity gives: critical is
// CRITICAL, warning WARNING, info (and none) OK.
func OfSeverity(s consumer.Severity) Status {
	switch s {
	case consumer.SeverityCritical:
		return Critical
	case consumer.SeverityWarning:
		return Warning
	}
	return OK
}
