"""Solutions of initial value problems as entries of the table: ``dualad.scipy.integrate.solve_ivp``."""
