/* text_escape.h - text from files another user may have written (a
 * journal's queue name, an error line naming a path) made safe to print on
 * a terminal, for cohort-work's commands. */
#ifndef COHORT_TEXT_ESCAPE_H
#define COHORT_TEXT_ESCAPE_H

/* s, malloc'd, with what a terminal could act on written as \xNN (control
 * bytes, DEL, C1 controls, bytes that are not UTF-8) and a backslash as
 * \\; NULL when out of memory. */
char *escaped(const char *s);

#endif
