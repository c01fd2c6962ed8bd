"""The related analyses on BELUGA's models: inoculation, combinational OOD, OOD evaluation,
behavioral testing of any model."""
