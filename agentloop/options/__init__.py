"""The command line's options: what each is called and takes (table), a value converted as
click would without click (values), and the record a run is given, with the combinations that
cannot work (record).

Imports nothing, so that a plain run reads the table on its way to the first agent at the cost
of that module alone."""
