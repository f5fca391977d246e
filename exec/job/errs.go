package job

import (
	"errors"

	"sluice/sql/pgerror"
)

func asPg(err error, pe **pgerror.Error) bool { return errors.As(err, pe) }
