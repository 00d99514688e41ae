package streamread

import "strings"

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
