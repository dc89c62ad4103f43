package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/memoryd/memoryd/internal/atrest"
	"github.com/memoryd/memoryd/internal/memory"
)

// encryptionKeyFile is the key of a database encrypted at rest
// (docs/encryption.md): MEMORYD_ENCRYPTION_KEY, else this file beside the
// database, made by the first `serve --encrypt` (or MEMORYD_ENCRYPT=1) of
// a new database. Unlike the token, it cannot be replaced.
var encryptionKeyFile = secretFile{env: "MEMORYD_ENCRYPTION_KEY", name: "encryption.key", what: "encryption key", irreplaceable: true}

// encryptAsked reports whether MEMORYD_ENCRYPT asks that a new database be
// encrypted at rest.
func encryptAsked(getenv func(string) string) (bool, error) {
	switch v := strings.TrimSpace(getenv("MEMORYD_ENCRYPT")); v {
	case "", "0", "false", "off":
		return false, nil
	case "1", "true", "on":
		return true, nil
	default:
		return false, &usageError{fmt.Sprintf("MEMORYD_ENCRYPT must be 1 or 0, not %q", v)}
	}
}

// atRestKey returns the sealer of the key of the database db: that of
// MEMORYD_ENCRYPTION_KEY, else of its key file. With encrypt, a missing
// key file is made with a new key; without it, no key is nil, which opens
// a plain database and is refused by an encrypted one. made is the key
// file it made, which the caller removes when the open fails.
func atRestKey(getenv func(string) string, db string, encrypt bool) (sealer *atrest.Sealer, made string, err error) {
	sealer, made, err = loadAtRestKey(getenv, db, encrypt)
	if err != nil && made != "" {
		os.Remove(made)
		made = ""
	}
	return sealer, made, err
}

func loadAtRestKey(getenv func(string) string, db string, encrypt bool) (*atrest.Sealer, string, error) {
	made := ""
	text := getenv(encryptionKeyFile.env)
	if text == "" {
		path, err := secretPath(getenv, db, encryptionKeyFile)
		switch {
		case err != nil && !encrypt: // no data folder, so no key file
			return nil, "", nil
		case err != nil:
			return nil, "", err
		}
		b, err := readTokenFile(path)
		var unsafe *unsafeTokenFileError
		switch {
		case err == nil:
			text = string(b)
		case errors.As(err, &unsafe):
			unsafe.secret = encryptionKeyFile
			return nil, made, err
		case !errors.Is(err, fs.ErrNotExist):
			return nil, made, fmt.Errorf("read the encryption key file: %w", err)
		case !encrypt:
			return nil, "", nil
		default:
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil { // a new database's folder
				return nil, "", fmt.Errorf("create the database folder: %w", err)
			}
			if text, err = loadSecret(getenv, db, encryptionKeyFile); err != nil {
				return nil, made, err
			}
			made = path
		}
	}
	key, err := atrest.ParseKey(text)
	if err != nil {
		return nil, made, fmt.Errorf("the encryption key (%s or the file %s): %w", encryptionKeyFile.env, encryptionKeyFile.name, err)
	}
	sealer, err := atrest.New(key)
	return sealer, made, err
}

// secretPath is where the secret sf of the database db is kept when its
// variable does not give it (loadSecret).
func secretPath(getenv func(string) string, db string, sf secretFile) (string, error) {
	if file, ok := memory.ParseLocation(db).File(); ok {
		return filepath.Join(filepath.Dir(file), sf.name), nil
	}
	dir, err := defaultDataDir(getenv)
	if err != nil {
		return "", fmt.Errorf("the %s of a database on a server is kept in memoryd's data folder, and there is none (%v): set %s, or HOME", sf.what, err, sf.env)
	}
	return filepath.Join(dir, sf.name), nil
}

// atRestError adds to an open's refusal for want of the right key where
// the key is looked for. A key file made for a database that turned out to
// hold plain events (made, from atRestKey) is removed: it keys nothing.
func atRestError(err error, getenv func(string) string, db, made string) error {
	if errors.Is(err, memory.ErrNotEncrypted) {
		if made != "" {
			os.Remove(made)
		}
		return fmt.Errorf("%w: export it and import the log into a new database with MEMORYD_ENCRYPT=1 (docs/encryption.md)", err)
	}
	if !errors.Is(err, memory.ErrKeyNeeded) && !errors.Is(err, memory.ErrWrongKey) {
		return err
	}
	where := "set " + encryptionKeyFile.env
	if path, perr := secretPath(getenv, db, encryptionKeyFile); perr == nil {
		where += " or put the key in " + path
	}
	return fmt.Errorf("%w: %s (docs/encryption.md)", err, where)
}
