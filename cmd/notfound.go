package cmd

import (
	"context"
	"fmt"
	"regexp"
	"strconv"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/pkg/suggest"
)

// streamNotFound finds the stream a not-found error names, as every
// command words it: `stream "ORDRES": stream not found`, or export's
// `stream "ORDRES" not found`. An error that goes on after "not found"
// already says what to do (a moved stream names where it went).
var streamNotFound = regexp.MustCompile(`stream ("(?:[^"\\]|\\.)*"):? (?:stream )?not found$`)

// didYouMean adds to the error of a stream that is not found (exit 3)
// the name of the server's stream that was probably meant, as plan's
// loader does for a misspelt field: `stream "ORDRES": stream not found
// (did you mean "ORDERS"?)`. It asks the server for its stream names only
// then, and only when the command has connected; any other error, or no
// close name, is returned as it is.
func didYouMean(ctx context.Context, f *factory.Factory, err error) error {
	js := f.Connected()
	if js == nil || exitcode.Of(err) != exitcode.NotFound {
		return err
	}
	m := streamNotFound.FindStringSubmatch(exitcode.Message(err))
	if m == nil {
		return err
	}
	name, uerr := strconv.Unquote(m[1])
	if uerr != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, f.Conn.Timeout)
	defer cancel()
	lister := js.StreamNames(ctx)
	var names []string
	for n := range lister.Name() {
		names = append(names, n)
	}
	if lister.Err() != nil {
		return err
	}
	if s := suggest.Name(name, names); s != "" && s != name {
		return &suggestionError{err: err, suggestion: s}
	}
	return err
}

// suggestionError is an error with the name that was probably meant; it
// is the error it wraps for errors.Is, errors.As and its exit code.
type suggestionError struct {
	err        error
	suggestion string
}

func (e *suggestionError) Error() string {
	return fmt.Sprintf("%s (did you mean %q?)", e.err.Error(), e.suggestion)
}

func (e *suggestionError) Unwrap() error { return e.err }
