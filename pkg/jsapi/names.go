package jsapi

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidName marks a stream name the server would refuse.
var ErrInvalidName = errors.New("invalid stream name")

// maxNameLen is the server's limit on stream and consumer names.
const maxNameLen = 255

// ValidateStreamName checks, without contacting the server, the rules the
// server applies to a stream name: 1 to 255 bytes, none of '.', '*', '>'
// (the name is a token of the API subjects), '/' or '\' (it is a
// directory of the store) or white space.
func ValidateStreamName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the name is empty", ErrInvalidName)
	case len(name) > maxNameLen:
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidName, maxNameLen)
	case strings.ContainsAny(name, ".*>/\\ \t\r\n\f\v"):
		return fmt.Errorf("%w %q: it must not contain '.', '*', '>', '/', '\\' or white space", ErrInvalidName, name)
	}
	return nil
}
