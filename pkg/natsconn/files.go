package natsconn

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/nats-io/nkeys"
)

// SettingError is a connection setting that cannot work, such as a
// credentials file that does not exist: bad input, found before connecting.
// It matches ErrContext, so it is reported like a bad context.
type SettingError struct {
	// Setting names what is wrong, e.g. `nkey file "/x/user.nk"`.
	Setting string
	Err     error
}

func (e *SettingError) Error() string { return e.Setting + ": " + e.Err.Error() }

func (e *SettingError) Unwrap() error { return e.Err }

// Is makes a SettingError an ErrContext (and so an errkind.Invalid):
// invalid input, not a failure.
func (e *SettingError) Is(target error) bool { return errors.Is(ErrContext, target) }

// checkFiles reads the credentials, nkey and TLS files that r names, so
// that a missing or malformed file is one clear line naming it, before
// anything connects. Values that are URIs (op://, env://, nsc://, data:)
// are natscli secret references, resolved when connecting.
func (r *Resolved) checkFiles() error {
	if path := r.Creds; isPath(path) {
		data, err := readSetting("credentials file", path)
		if err != nil {
			return err
		}
		if _, err := nkeys.ParseDecoratedJWT(data); err != nil {
			return &SettingError{Setting: fmt.Sprintf("credentials file %q", path), Err: fmt.Errorf("no user JWT: %w", err)}
		}
		if _, err := nkeys.ParseDecoratedUserNKey(data); err != nil {
			return &SettingError{Setting: fmt.Sprintf("credentials file %q", path), Err: fmt.Errorf("no user NKey seed: %w", err)}
		}
	}
	if path := r.NKey; isPath(path) {
		data, err := readSetting("nkey file", path)
		if err != nil {
			return err
		}
		kp, err := nkeys.ParseDecoratedNKey(data)
		if err == nil {
			_, err = kp.Seed()
		}
		if err != nil {
			return &SettingError{Setting: fmt.Sprintf("nkey file %q", path), Err: fmt.Errorf("not an NKey seed: %w", err)}
		}
	}
	for _, f := range []struct{ what, path string }{
		{"TLS certificate", r.TLSCert}, {"TLS key", r.TLSKey}, {"TLS CA", r.TLSCA},
	} {
		if isPath(f.path) {
			if _, err := readSetting(f.what, f.path); err != nil {
				return err
			}
		}
	}
	return nil
}

func isPath(v string) bool {
	return v != "" && !strings.Contains(v, "://") && !strings.HasPrefix(v, "data:")
}

func readSetting(what, path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &SettingError{Setting: fmt.Sprintf("%s %q", what, path), Err: err}
	}
	return data, nil
}
