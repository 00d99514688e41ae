package streamread

import (
	"errors"
	"strings"
)

// SubjectMatches reports whether subject matches filter, with the * and >
// wildcards; an empty filter matches everything.
func SubjectMatches(filter, subject string) bool {
	if filter == "" || filter == ">" {
		return true
	}
	ft := strings.Split(filter, ".")
	st := strings.Split(subject, ".")
	for i, t := range ft {
		if t == ">" {
			return len(st) > i
		}
		if i >= len(st) || (t != "*" && t != st[i]) {
			return false
		}
	}
	return len(ft) == len(st)
}

// SubjectMatchesAny reports whether subject matches one of filters; no
// filters match everything.
func SubjectMatchesAny(filters []string, subject string) bool {
	if len(filters) == 0 {
		return true
	}
	for _, f := range filters {
		if SubjectMatches(f, subject) {
			return true
		}
	}
	return false
}

// SubjectCovers reports whether every subject that filter b matches,
// filter a matches too.
func SubjectCovers(a, b string) bool {
	at, bt := strings.Split(a, "."), strings.Split(b, ".")
	for i, t := range at {
		if t == ">" {
			return i < len(bt)
		}
		if i >= len(bt) {
			return false
		}
		switch {
		case t == "*":
			if bt[i] == ">" {
				return false
			}
		case t != bt[i]:
			return false
		}
	}
	return len(at) == len(bt)
}

// SubjectsOverlap reports whether some subject matches both filters.
func SubjectsOverlap(a, b string) bool {
	at, bt := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(at) && i < len(bt); i++ {
		if at[i] == ">" || bt[i] == ">" {
			return true
		}
		if at[i] != "*" && bt[i] != "*" && at[i] != bt[i] {
			return false
		}
	}
	return len(at) == len(bt)
}

// ValidateSubject checks a subject or subject filter as the server would:
// no white space, no empty token, wildcards as whole tokens, > last.
func ValidateSubject(s string) error {
	if s == "" {
		return errors.New("empty subject")
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return errors.New("subjects have no white space")
	}
	tokens := strings.Split(s, ".")
	for i, t := range tokens {
		switch {
		case t == "":
			return errors.New("empty token")
		case t == ">" && i != len(tokens)-1:
			return errors.New("> must be the last token")
		case len(t) > 1 && strings.ContainsAny(t, "*>"):
			return errors.New("wildcards must be whole tokens")
		}
	}
	return nil
}
