package audit

import (
	"regexp"
	"strings"
)

// Mask is what a masked secret reads as (the same as natsconn.RedactURL's).
const Mask = "xxxxx"

// secretFlags are the flags whose whole value is a secret.
var secretFlags = map[string]bool{"password": true, "token": true, "nkey": true}

// userFlag's value may carry a password after a colon: user:password.
const userFlag = "user"

// minSecret is the shortest known secret Masker replaces wherever it
// appears: a shorter one would mask letters of unrelated words.
const minSecret = 4

var (
	// urlUserinfo is the userinfo of a URL: nats://user:password@host,
	// nats://token@host. Greedy up to the last @ before the host, so a
	// password holding an @ is masked whole; a comma ends it (server lists).
	urlUserinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://)([^/\s,]*)@`)
	// envSecret is NAME=value where the name says it holds a secret, as
	// in --var DB_PASSWORD=x or a NATS_TOKEN=x argument.
	envSecret = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=(.*)$`)
	// secretName is what such a name contains.
	secretName = regexp.MustCompile(`(?i)pass|secret|token|seed|nkey|credential|api_?key|private`)
)

// Masker masks secrets in a command line and in text: the values of
// --password, --token and --nkey; the password of --user user:password;
// the userinfo of URLs (nats://u:pw@h → nats://u:xxxxx@h); the value of
// NAME=value arguments whose name says secret (PASSWORD, TOKEN, SEED, ...);
// and Secrets, the values the connection really uses (from a flag, an
// environment variable or a natscli context), wherever they appear.
type Masker struct {
	Secrets []string
}

// Args returns args with every secret masked; args is not changed.
func (m Masker) Args(args []string) []string {
	out := make([]string, len(args))
	copy(out, args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			// The rest are arguments, not flags: only their text is masked.
			for j := i + 1; j < len(out); j++ {
				out[j] = m.Text(out[j])
			}
			break
		}
		if !strings.HasPrefix(a, "--") {
			out[i] = m.Text(a)
			continue
		}
		name, value, inline := strings.Cut(a[2:], "=")
		switch {
		case secretFlags[name] && inline:
			out[i] = "--" + name + "=" + Mask
		case secretFlags[name]:
			if i+1 < len(out) {
				out[i+1] = Mask
				i++
			}
		case name == userFlag && inline:
			out[i] = "--" + name + "=" + m.Text(maskUser(value))
		case name == userFlag:
			if i+1 < len(out) {
				out[i+1] = m.Text(maskUser(out[i+1]))
				i++
			}
		case inline:
			out[i] = "--" + name + "=" + m.Text(value)
		default:
			out[i] = m.Text(a)
		}
	}
	return out
}

// maskUser masks the password of user:password.
func maskUser(v string) string {
	if user, _, ok := strings.Cut(v, ":"); ok {
		return user + ":" + Mask
	}
	return v
}

// Text masks the secrets of one argument or message: URL userinfo,
// NAME=value with a secret name, and the known Secrets.
func (m Masker) Text(s string) string {
	if s == "" {
		return s
	}
	s = urlUserinfo.ReplaceAllStringFunc(s, func(match string) string {
		sub := urlUserinfo.FindStringSubmatch(match)
		if user, _, ok := strings.Cut(sub[2], ":"); ok {
			return sub[1] + user + ":" + Mask + "@"
		}
		return sub[1] + Mask + "@"
	})
	if sub := envSecret.FindStringSubmatch(s); sub != nil && secretName.MatchString(sub[1]) {
		s = sub[1] + "=" + Mask
	}
	for _, secret := range m.Secrets {
		if len(secret) >= minSecret {
			s = strings.ReplaceAll(s, secret, Mask)
		}
	}
	return s
}
