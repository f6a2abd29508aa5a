/* tensorplan: the former name of session.h (the decode session and the sampler), kept so
 * that programs written against it still build. New code includes tensorplan/session.h. */
#ifndef TENSORPLAN_DECODE_H
#define TENSORPLAN_DECODE_H

#include "tensorplan/session.h"

#endif /* TENSORPLAN_DECODE_H */
