package job

// SetFailpoint replaces SLUICE_FAILPOINT for the jobs started after it.
func SetFailpoint(s string) { theFailpoint = parseFailpoint(s) }
