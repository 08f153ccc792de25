/*
 * option.c - values of the --otel-attrs option (see option.h).
 */
#include <stddef.h>
#include <strings.h>

#include "option.h"

enum so_switch so_switch_parse(const char *s)
{
	if (s && !strcasecmp(s, "on"))
		return SO_SWITCH_ON;
	if (s && !strcasecmp(s, "off"))
		return SO_SWITCH_OFF;
	return SO_SWITCH_INVALID;
}
