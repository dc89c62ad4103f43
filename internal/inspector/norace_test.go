//go:build !race

package inspector

// raceEnabled says the tests run under the race detector, whose SQLite
// runs several times slower.
const raceEnabled = false
