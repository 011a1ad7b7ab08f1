"""The Rasch measurement report: fit, separation, bias/interaction, DIF and plausible values of an MFRM fit
(``docs/measurement.md``)."""
