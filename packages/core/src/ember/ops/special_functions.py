"""The special functions of ``torch.special`` that ember-core's other op modules lack: their
array kernels and their registration (``ember.special`` re-exports them with the ops that
already exist elsewhere: ``erf``, ``erfinv``, ``lgamma``, ``digamma``, ``sigmoid``, ...).

Every kernel evaluates in float64 (``in_float64``: a float32 result is rounded once from it)
with the algorithms of PyTorch's ``ATen/native/Math.h``, themselves Cephes' (S. L. Moshier,
3-clause BSD): Chebyshev and rational approximations whose coefficients are below, the
Euler-Maclaurin sum for Hurwitz's zeta, SciPy's series and continued fraction for the
incomplete gamma functions, the three-term recurrences of the orthogonal polynomials. No
SciPy. Every range of a piecewise approximation is evaluated on all elements (inputs clipped
into it) and the right one picked with ``where``: boolean-mask indexing would cost a device
synchronisation on a GPU, and the array module always comes from the input.

Ops that PyTorch also has at the top level (``torch.i0``, ``torch.sinc``,
``torch.polygamma``, ``torch.mvlgamma``, ``torch.igamma``, ``torch.igammac``) are exported
as ``ember.<name>`` and Tensor methods; the others are registered under their ATen names
(``special_erfcx``, ``special_bessel_j0``, ...) for the registry's consumers only, and
reached through ``ember.special``.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype
from .._device import xp_of
from .._tensor import Tensor
from ..autograd.graph import make_node_class, mark_holomorphic, result
from ._factories import binary_op, unary_op
from ._special import (
    _ERF_C,
    _ERF_D,
    _ERF_INNER,
    _ERF_P,
    _ERF_Q,
    _erf_inner,
    _poly,
    erfc_f64,
    in_float64,
    lgamma_f64,
    trigamma_f64,
)
from .registry import register, register_method

__all__ = ["i0", "sinc", "polygamma", "mvlgamma", "igamma", "igammac", "special_erfcx",
           "special_ndtr", "special_ndtri", "special_log_ndtr", "special_i0e", "special_i1",
           "special_i1e", "special_entr", "special_xlog1py", "special_zeta",
           "special_bessel_j0", "special_bessel_j1", "special_bessel_y0", "special_bessel_y1",
           "special_modified_bessel_i0", "special_modified_bessel_i1",
           "special_modified_bessel_k0", "special_modified_bessel_k1",
           "special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k1",
           "special_spherical_bessel_j0", "special_airy_ai", "POLYNOMIALS"]

_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)
_INV_SQRT_2 = 1 / math.sqrt(2)
_TWO_OVER_PI = 2 / math.pi
_MACHEP = 1.11022302462515654042e-16

# -- Cephes' coefficients, as ATen/native/Math.h has them (highest power first) -------------------

_NDTRI_P0 = (-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
    1.39312609387279679503E1, -1.23916583867381258016E0)
_NDTRI_Q0 = (1.00000000000000000000E0, 1.95448858338141759834E0, 4.67627912898881538453E0,
    8.63602421390890590575E1, -2.25462687854119370527E2, 2.00260212380060660359E2,
    -8.20372256168333339912E1, 1.59056225126211695515E1, -1.18331621121330003142E0)
_NDTRI_P1 = (4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
    4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
    -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4)
_NDTRI_Q1 = (1.00000000000000000000E0, 1.57799883256466749731E1, 4.53907635128879210584E1,
    4.13172038254672030440E1, 1.50425385692907503408E1, 2.50464946208309415979E0,
    -1.42182922854787788574E-1, -3.80806407691578277194E-2, -9.33259480895457427372E-4)
_NDTRI_P2 = (3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
    1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
    3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9)
_NDTRI_Q2 = (1.00000000000000000000E0, 6.02427039364742014255E0, 3.67983563856160859403E0,
    1.37702099489081330271E0, 2.16236993594496635890E-1, 1.34204006088543189037E-2,
    3.28014464682127739104E-4, 2.89247864745380683936E-6, 6.79019408009981274425E-9)
_AIRY_AN = (+3.46538101525629032477e-01, +1.20075952739645805542e+01, +7.62796053615234516538e+01,
    +1.68089224934630576269e+02, +1.59756391350164413639e+02, +7.05360906840444183113e+01,
    +1.40264691163389668864e+01, +9.99999999999999995305e-01)
_AIRY_AD = (+5.67594532638770212846e-01, +1.47562562584847203173e+01, +8.45138970141474626562e+01,
    +1.77318088145400459522e+02, +1.64234692871529701831e+02, +7.14778400825575695274e+01,
    +1.40959135607834029598e+01, +1.00000000000000000470e+00)
_AIRY_AFN = (-1.31696323418331795333e-01, -6.26456544431912369773e-01,
    -6.93158036036933542233e-01, -2.79779981545119124951e-01, -4.91900132609500318020e-02,
    -4.06265923594885404393e-03, -1.59276496239262096340e-04, -2.77649108155232920844e-06,
    -1.67787698489114633780e-08)
_AIRY_AFD = (+1.33560420706553243746e+01, +3.26825032795224613948e+01,
    +2.67367040941499554804e+01, +9.18707402907259625840e+00, +1.47529146771666414581e+00,
    +1.15687173795188044134e-01, +4.40291641615211203805e-03, +7.54720348287414296618e-05,
    +4.51850092970580378464e-07)
_AIRY_AGN = (+1.97339932091685679179e-02, +3.91103029615688277255e-01,
    +1.06579897599595591108e+00, +9.39169229816650230044e-01, +3.51465656105547619242e-01,
    +6.33888919628925490927e-02, +5.85804113048388458567e-03, +2.82851600836737019778e-04,
    +6.98793669997260967291e-06, +8.11789239554389293311e-08, +3.41551784765923618484e-10)
_AIRY_AGD = (+9.30892908077441974853e+00, +1.98352928718312140417e+01,
    +1.55646628932864612953e+01, +5.47686069422975497931e+00, +9.54293611618961883998e-01,
    +8.64580826352392193095e-02, +4.12656523824222607191e-03, +1.01259085116509135510e-04,
    +1.17166733214413521882e-06, +4.91834570062930015649e-09)
_J0_PP = (+7.96936729297347051624e-04, +8.28352392107440799803e-02, +1.23953371646414299388e+00,
    +5.44725003058768775090e+00, +8.74716500199817011941e+00, +5.30324038235394892183e+00,
    +9.99999999999999997821e-01)
_J0_PQ = (+9.24408810558863637013e-04, +8.56288474354474431428e-02, +1.25352743901058953537e+00,
    +5.47097740330417105182e+00, +8.76190883237069594232e+00, +5.30605288235394617618e+00,
    +1.00000000000000000218e+00)
_J0_QP = (-1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
    -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
    -5.14105326766599330220e+01, -6.05014350600728481186e+00)
_J0_QQ = (+6.43178256118178023184e+01, +8.56430025976980587198e+02, +3.88240183605401609683e+03,
    +7.24046774195652478189e+03, +5.93072701187316984827e+03, +2.06209331660327847417e+03,
    +2.42005740240291393179e+02)
_J0_RP = (-4.79443220978201773821e+09, +1.95617491946556577543e+12, -2.49248344360967716204e+14,
    +9.70862251047306323952e+15)
_J0_RQ = (+4.99563147152651017219e+02, +1.73785401676374683123e+05, +4.84409658339962045305e+07,
    +1.11855537045356834862e+10, +2.11277520115489217587e+12, +3.10518229857422583814e+14,
    +3.18121955943204943306e+16, +1.71086294081043136091e+18)
_J1_PP = (+7.62125616208173112003e-04, +7.31397056940917570436e-02, +1.12719608129684925192e+00,
    +5.11207951146807644818e+00, +8.42404590141772420927e+00, +5.21451598682361504063e+00,
    +1.00000000000000000254e+00)
_J1_PQ = (+5.71323128072548699714e-04, +6.88455908754495404082e-02, +1.10514232634061696926e+00,
    +5.07386386128601488557e+00, +8.39985554327604159757e+00, +5.20982848682361821619e+00,
    +9.99999999999999997461e-01)
_J1_QP = (+5.10862594750176621635e-02, +4.98213872951233449420e+00, +7.58238284132545283818e+01,
    +3.66779609360150777800e+02, +7.10856304998926107277e+02, +5.97489612400613639965e+02,
    +2.11688757100572135698e+02, +2.52070205858023719784e+01)
_J1_QQ = (+7.42373277035675149943e+01, +1.05644886038262816351e+03, +4.98641058337653607651e+03,
    +9.56231892404756170795e+03, +7.99704160447350683650e+03, +2.82619278517639096600e+03,
    +3.36093607810698293419e+02)
_J1_RP = (-8.99971225705559398224e+08, +4.52228297998194034323e+11, -7.27494245221818276015e+13,
    +3.68295732863852883286e+15)
_J1_RQ = (+6.20836478118054335476e+02, +2.56987256757748830383e+05, +8.35146791431949253037e+07,
    +2.21511595479792499675e+10, +4.74914122079991414898e+12, +7.84369607876235854894e+14,
    +8.95222336184627338078e+16, +5.32278620332680085395e+18)
_Y0_YP = (+1.55924367855235737965e+04, -1.46639295903971606143e+07, +5.43526477051876500413e+09,
    -9.82136065717911466409e+11, +8.75906394395366999549e+13, -3.46628303384729719441e+15,
    +4.42733268572569800351e+16, -1.84950800436986690637e+16)
_Y0_YQ = (+1.04128353664259848412e+03, +6.26107330137134956842e+05, +2.68919633393814121987e+08,
    +8.64002487103935000337e+10, +2.02979612750105546709e+13, +3.17157752842975028269e+15,
    +2.50596256172653059228e+17)
_Y1_YP = (+1.26320474790178026440e+09, -6.47355876379160291031e+11, +1.14509511541823727583e+14,
    -8.12770255501325109621e+15, +2.02439475713594898196e+17, -7.78877196265950026825e+17)
_Y1_YQ = (+5.94301592346128195359e+02, +2.35564092943068577943e+05, +7.34811944459721705660e+07,
    +1.87601316108706159478e+10, +3.88231277496238566008e+12, +6.20557727146953693363e+14,
    +6.87141087355300489866e+16, +3.97270608116560655612e+18)
_K0_A = (+1.37446543561352307156e-16, +4.25981614279661018399e-14, +1.03496952576338420167e-11,
    +1.90451637722020886025e-09, +2.53479107902614945675e-07, +2.28621210311945178607e-05,
    +1.26461541144692592338e-03, +3.59799365153615016266e-02, +3.44289899924628486886e-01,
    -5.35327393233902768720e-01)
_K0_B = (+5.30043377268626276149e-18, -1.64758043015242134646e-17, +5.21039150503902756861e-17,
    -1.67823109680541210385e-16, +5.51205597852431940784e-16, -1.84859337734377901440e-15,
    +6.34007647740507060557e-15, -2.22751332699166985548e-14, +8.03289077536357521100e-14,
    -2.98009692317273043925e-13, +1.14034058820847496303e-12, -4.51459788337394416547e-12,
    +1.85594911495471785253e-11, -7.95748924447710747776e-11, +3.57739728140030116597e-10,
    -1.69753450938905987466e-09, +8.57403401741422608519e-09, -4.66048989768794782956e-08,
    +2.76681363944501510342e-07, -1.83175552271911948767e-06, +1.39498137188764993662e-05,
    -1.28495495816278026384e-04, +1.56988388573005337491e-03, -3.14481013119645005427e-02,
    +2.44030308206595545468e+00)
_K1_A = (-7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
    -1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
    -1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
    -3.53155960776544875667e-01, +1.52530022733894777053e+00)
_K1_B = (-5.75674448366501715755e-18, +1.79405087314755922667e-17, -5.68946255844285935196e-17,
    +1.83809354436663880070e-16, -6.05704724837331885336e-16, +2.03870316562433424052e-15,
    -7.01983709041831346144e-15, +2.47715442448130437068e-14, -8.97670518232499435011e-14,
    +3.34841966607842919884e-13, -1.28917396095102890680e-12, +5.13963967348173025100e-12,
    -2.12996783842756842877e-11, +9.21831518760500529508e-11, -4.19035475934189648750e-10,
    +2.01504975519703286596e-09, -1.03457624656780970260e-08, +5.74108412545004946722e-08,
    -3.50196060308781257119e-07, +2.40648494783721712015e-06, -1.93619797416608296024e-05,
    +1.95215518471351631108e-04, -2.85781685962277938680e-03, +1.03923736576817238437e-01,
    +2.72062619048444266945e+00)
_I0E_A = (-4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
    1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
    1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
    1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1)
_I0E_B = (-7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
    7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
    3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
    2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
    8.04490411014108831608E-1)
_I1E_A = (2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
    -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
    3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
    -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
    9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
    -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
    4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
    -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
    2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
    -1.76416518357834055153E-1, 2.52587186443633654823E-1)
_I1E_B = (7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
    -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
    -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
    4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
    3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
    -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
    -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
    7.78576235018280120474E-1)


def _chbevl(x, coeffs):
    """Cephes' ``chbevl``: the Chebyshev series ``coeffs`` at ``x`` (Clenshaw's recurrence)."""
    b0 = x * 0 + coeffs[0]
    b1 = x * 0
    b2 = b1
    for c in coeffs[1:]:
        b2 = b1
        b1 = b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)


def _where(cond, a, b):
    return xp_of(cond).where(cond, a, b)


# -- erfcx, ndtr, ndtri, log_ndtr -----------------------------------------------------------------

def _erfcx_positive(y):
    """``exp(y^2) erfc(y)`` for ``y > 0.46875`` (NaN passes): Cody's rationals without their
    ``exp(-y^2)`` factor, the asymptotic one in ``1/y^2`` past 4 (no overflow up to inf)."""
    ym = np.minimum(y, 4.0)
    middle = _poly(ym, _ERF_C) / _poly(ym, _ERF_D)
    yt = np.maximum(y, 4.0)
    z = 1 / (yt * yt)
    tail = (1 / _SQRT_PI - z * _poly(z, _ERF_P) / _poly(z, _ERF_Q)) / yt
    return _where(y <= 4.0, middle, tail)


def erfcx_f64(x):
    """``exp(x^2) * erfc(x)``: Cody's rational in ``|x|`` beyond 0.46875, ``exp(x^2) (1 -
    erf(x))`` inside, ``2 exp(x^2) - erfcx(-x)`` for negative ``x`` (inf past -26.7)."""
    a = np.abs(x)
    outer = _erfcx_positive(np.maximum(a, _ERF_INNER))
    outer = _where(x < 0, 2 * np.exp(x * x) - outer, outer)
    inner = np.exp(x * x) * (1 - _erf_inner(x))
    return _where(a <= _ERF_INNER, inner, outer)


def ndtr_f64(x):
    """The standard normal CDF, ``erfc(-x / sqrt(2)) / 2``."""
    return 0.5 * erfc_f64(-x * _INV_SQRT_2)


def ndtri_f64(y0):
    """The inverse of ``ndtr`` (Cephes' ``ndtri``): a rational in ``y - 1/2`` in the middle,
    rationals in ``1 / sqrt(-2 log y)`` in the tails."""
    exp_m2 = 0.13533528323661269189
    flip = y0 > 1 - exp_m2
    y = _where(flip, 1 - y0, y0)
    yc = y.clip(exp_m2, 1 - exp_m2) - 0.5
    y2 = yc * yc
    central = (yc + yc * (y2 * _poly(y2, _NDTRI_P0) / _poly(y2, _NDTRI_Q0))) * _SQRT_2PI
    yt = y.clip(1e-300, exp_m2)
    x = np.sqrt(-2 * np.log(yt))
    z = 1 / x
    near = z * _poly(z, _NDTRI_P1) / _poly(z, _NDTRI_Q1)
    far = z * _poly(z, _NDTRI_P2) / _poly(z, _NDTRI_Q2)
    tail = x - np.log(x) / x - _where(x < 8, near, far)
    tail = _where(flip, tail, -tail)
    # y below 1e-300 (subnormal): sqrt(-2 log y) directly, as the clip above cannot
    xs = np.sqrt(-2 * np.log(np.maximum(y, 5e-324)))
    tiny = xs - np.log(xs) / xs - 1 / xs * _poly(1 / xs, _NDTRI_P2) / _poly(1 / xs, _NDTRI_Q2)
    tail = _where(y < 1e-300, _where(flip, tiny, -tiny), tail)
    r = _where(y > exp_m2, central, tail)
    r = _where(y0 == 0, -np.inf, _where(y0 == 1, np.inf, r))
    return _where((y0 < 0) | (y0 > 1), np.nan, r)


def log_ndtr_f64(x):
    """``log(ndtr(x))``: ``log(erfcx(-x / sqrt 2) / 2) - x^2 / 2`` below -1 (no underflow),
    ``log1p(-erfc(x / sqrt 2) / 2)`` above."""
    t = x * _INV_SQRT_2
    low = np.log(erfcx_f64(-np.minimum(t, 0)) / 2) - t * t
    high = np.log1p(-erfc_f64(t) / 2)
    return _where(x < -1, low, high)


# -- modified Bessel functions of the first and second kind --------------------------------------

def _i0e_positive(a):
    """``exp(-a) I0(a)`` for ``a >= 0``."""
    small = _chbevl(np.minimum(a, 8.0) / 2 - 2, _I0E_A)
    ab = np.maximum(a, 8.0)
    large = _chbevl(32 / ab - 2, _I0E_B) / np.sqrt(ab)
    return _where(a <= 8, small, large)


def _i1e_positive(a):
    """``exp(-a) I1(a)`` for ``a >= 0``."""
    small = _chbevl(np.minimum(a, 8.0) / 2 - 2, _I1E_A) * a
    ab = np.maximum(a, 8.0)
    large = _chbevl(32 / ab - 2, _I1E_B) / np.sqrt(ab)
    return _where(a <= 8, small, large)


def i0_f64(x):
    a = np.abs(x)
    return np.exp(a) * _i0e_positive(a)


def i0e_f64(x):
    return _i0e_positive(np.abs(x))


def i1_f64(x):
    a = np.abs(x)
    return np.copysign(np.exp(a) * _i1e_positive(a), x)


def i1e_f64(x):
    return np.copysign(_i1e_positive(np.abs(x)), x)


def _k_small(x, coeffs, i_fn, order):
    """K0/K1 on ``(0, 2]``: a Chebyshev series in ``x^2 - 2`` and the logarithmic term."""
    xs = x.clip(1e-300, 2.0)
    series = _chbevl(xs * xs - 2, coeffs)
    if order == 0:
        return series - np.log(0.5 * xs) * i_fn(xs)
    return np.log(0.5 * xs) * i_fn(xs) + series / xs


def _k_kernel(coeffs_small, coeffs_large, i_fn, order, scaled):
    def kernel(x):
        small = _k_small(x, coeffs_small, i_fn, order)
        xl = np.maximum(x, 2.0)
        large = _chbevl(8 / xl - 2, coeffs_large) / np.sqrt(xl)
        if scaled:
            small = small * np.exp(np.minimum(x, 2.0))
        else:
            large = large * np.exp(-xl)
        r = _where(x <= 2, small, large)
        return _where(x == 0, np.inf, _where(x < 0, np.nan, r))

    kernel.__name__ = f"{'scaled_' if scaled else ''}modified_bessel_k{order}_f64"
    return kernel


k0_f64 = _k_kernel(_K0_A, _K0_B, i0_f64, 0, False)
k1_f64 = _k_kernel(_K1_A, _K1_B, i1_f64, 1, False)
k0e_f64 = _k_kernel(_K0_A, _K0_B, i0_f64, 0, True)
k1e_f64 = _k_kernel(_K1_A, _K1_B, i1_f64, 1, True)


# -- Bessel functions of the first and second kind -----------------------------------------------

def _bessel_asymptotic(x, phase, sine):
    """Hankel's asymptotic form for ``x > 5``: ``sqrt(2 / (pi x)) (P cos(x - phase) - 5/x Q
    sin(x - phase))`` for J (``sine=False``), with sin and cos exchanged for Y."""
    xl = np.maximum(x, 5.0)
    z = 25 / (xl * xl)
    p = _poly(z, _J0_PP if phase < 1 else _J1_PP) / _poly(z, _J0_PQ if phase < 1 else _J1_PQ)
    q = _poly(z, _J0_QP if phase < 1 else _J1_QP) / _poly(z, _J0_QQ if phase < 1 else _J1_QQ)
    xn = xl - phase
    if sine:
        r = p * np.sin(xn) + 5 / xl * q * np.cos(xn)
    else:
        r = p * np.cos(xn) - 5 / xl * q * np.sin(xn)
    return r * math.sqrt(2 / math.pi) / np.sqrt(xl)


_PI_4 = math.pi / 4
_3PI_4 = 3 * math.pi / 4


def _j0_small(a):
    a = np.minimum(a, 5.0)
    z = a * a
    r = (z - 5.78318596294678452118) * (z - 30.4712623436620863991)
    r = r * _poly(z, _J0_RP) / _poly(z, _J0_RQ)
    return _where(a < 1e-5, 1 - z / 4, r)


def _j1_small(a):
    a = np.minimum(a, 5.0)
    z = a * a
    return _poly(z, _J1_RP) / _poly(z, _J1_RQ) * a * (z - 14.6819706421238932572) * (
        z - 49.2184563216946036703)


def j0_f64(x):
    a = np.abs(x)
    return _where(a <= 5, _j0_small(a), _bessel_asymptotic(a, _PI_4, False))


def j1_f64(x):
    a = np.abs(x)
    r = _where(a <= 5, _j1_small(a), _bessel_asymptotic(a, _3PI_4, False))
    return _where(x < 0, -r, r)


def y0_f64(x):
    xs = x.clip(1e-300, 5.0)
    z = xs * xs
    small = _poly(z, _Y0_YP) / _poly(z, _Y0_YQ) + _TWO_OVER_PI * np.log(xs) * _j0_small(xs)
    r = _where(x <= 5, small, _bessel_asymptotic(x, _PI_4, True))
    return _where(x == 0, -np.inf, _where(x < 0, np.nan, r))


def y1_f64(x):
    xs = x.clip(1e-300, 5.0)
    z = xs * xs
    small = xs * (_poly(z, _Y1_YP) / _poly(z, _Y1_YQ)) + _TWO_OVER_PI * (
        _j1_small(xs) * np.log(xs) - 1 / xs)
    r = _where(x <= 5, small, _bessel_asymptotic(x, _3PI_4, True))
    return _where(x == 0, -np.inf, _where(x < 0, np.nan, r))


def spherical_j0_f64(x):
    """``sin(x) / x``, a Taylor polynomial below 0.5, 0 at infinity."""
    z = x * x
    small = 1 + z * (-1 / 6 + z * (1 / 120 + z * (-1 / 5040 + z * (1 / 362880 + z * (
        -1 / 39916800 + z * (1 / 6227020800))))))
    r = _where(np.abs(x) < 0.5, small, np.sin(x) / x)
    return _where(np.isinf(x), 0.0, r)


def airy_ai_f64(x):
    """Airy's Ai (Cephes' ``airy``): Maclaurin series on ``[-2.09, 2.09)``, asymptotic
    rationals beyond; NaN at +-inf, 0 past 103.892 (as PyTorch)."""
    # oscillating tail, x < -2.09
    xn = np.minimum(x, -2.09)
    zeta = -2 * xn * np.sqrt(-xn) / 3
    z = 1 / zeta
    z2 = z * z
    f = 1 + z2 * _poly(z2, _AIRY_AFN) / _poly(z2, _AIRY_AFD)
    g = z * _poly(z2, _AIRY_AGN) / _poly(z2, _AIRY_AGD)
    t = zeta + _PI_4
    negative = 0.564189583547756286948 / np.sqrt(np.sqrt(-xn)) * (np.sin(t) * f - np.cos(t) * g)
    # decaying tail, x >= 2.09
    xp_ = x.clip(2.09, 103.892)
    zeta = 2 * xp_ * np.sqrt(xp_) / 3
    r = _poly(1 / zeta, _AIRY_AN) / _poly(1 / zeta, _AIRY_AD)
    positive = 0.564189583547756286948 * r / (2 * np.sqrt(np.sqrt(xp_)) * np.exp(zeta))
    # the series in between: Ai = c1 f - c2 g
    xm = x.clip(-2.09, 2.09)
    z3 = xm * xm * xm
    m = xm * 0 + 1
    n = xm * 1
    f = m * 1
    g = n * 1
    k = 1.0
    for _ in range(40):  # |x^3| <= 9.2: the terms fall below 1e-17 of the sum by then
        m = m * z3 / (k + 1) / (k + 2)
        n = n * z3 / (k + 2) / (k + 3)
        f = f + m
        g = g + n
        k += 3
    series = 0.355028053887817239260 * f - 0.258819403792806798405 * g
    r = _where(x < -2.09, negative, _where(x < 2.09, series, positive))
    r = _where(x > 103.892, 0.0, r)
    return _where(np.isinf(x), np.nan, r)


# -- elementary pieces: sinc, entr, xlog1py -----------------------------------------------------

def sinc_f64(x):
    """``sin(pi x) / (pi x)``, 1 at 0; even, so evaluated at ``|x|`` with the argument
    reduced exactly (``|x| mod 2``) first."""
    a = np.abs(x)
    s = np.sin(np.pi * np.remainder(a, 2.0))
    return _where(x == 0, 1.0, s / (np.pi * a))


def entr_f64(x):
    """``-x log x``: 0 at 0, -inf for negative ``x``, NaN stays NaN."""
    r = -x * np.log(np.maximum(x, 5e-324))
    return _where(x > 0, r, _where(x == 0, 0.0, _where(x < 0, -np.inf, x)))


def xlog1py_f64(x, y):
    """``x * log1p(y)``, 0 where ``x == 0`` unless ``y`` is NaN."""
    r = _where(x == 0, 0.0, x * np.log1p(y))
    return _where(np.isnan(y), y, r)


# -- Hurwitz zeta and the polygamma functions ----------------------------------------------------

# (2k)! / B_2k for the Euler-Maclaurin tail (Cephes' zeta)
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
           7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
           -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18)


def zeta_f64(x, q):
    """Hurwitz's ``zeta(x, q) = sum_k (q + k)^-x`` (Cephes' ``zeta``): the first terms
    summed until ``q + k > 9`` (at least nine), the rest by Euler-Maclaurin with the Bernoulli
    numbers up to B_24. Poles and domain as PyTorch: inf at ``x == 1`` and at non-positive
    integer ``q``; NaN for ``x < 1`` and for non-integer ``x`` with ``q <= 0``."""
    xp = xp_of(x)
    finite_q = xp.where(np.isfinite(q), q, 0.0)
    lowest = float(finite_q.min()) if q.size else 0.0
    n_terms = max(9, int(math.floor(9 - lowest)) + 1)
    s = q * 0
    a = q * 1
    for _ in range(n_terms + 1):  # k = 0 .. n_terms, Cephes' direct sum
        s = s + np.power(a, -x)
        a = a + 1
    a = a - 1
    b = np.power(a, -x)
    w = a
    s = s + b * w / (x - 1) - 0.5 * b
    fact = x * 0 + 1
    k = 0.0
    done = xp.zeros(s.shape, dtype=bool)
    for coef in _ZETA_A:
        fact = fact * (x + k)
        b = b / w
        t = fact * b / coef
        s = s + xp.where(done, 0.0, t)
        done = done | (np.abs(t / s) < _MACHEP)
        k += 1
        fact = fact * (x + k)
        b = b / w
        k += 1
    # x == inf: Cephes' direct sum stops at once on (q + k)^-inf: 1 at q == 1, inf below
    s = xp.where((x == np.inf) & (q <= 1), xp.where(q == 1, 1.0, np.inf), s)
    q_pole = (q <= 0) & (q == np.floor(q))
    s = xp.where((q <= 0) & (x != np.floor(x)), np.nan, s)
    s = xp.where(q_pole, np.inf, s)
    s = xp.where(x < 1, np.nan, s)
    return xp.where(x == 1, np.inf, s)


def polygamma_f64(n: int, x):
    """``polygamma(n, x)`` for ``n >= 1``: trigamma's series for ``n == 1`` (as PyTorch),
    ``(-1)^(n+1) n! zeta(n + 1, x)`` above."""
    if n == 1:
        return trigamma_f64(x)
    sign = 1.0 if n % 2 else -1.0
    return sign * math.exp(math.lgamma(n + 1)) * zeta_f64(x * 0 + (n + 1), x)


# -- regularized incomplete gamma functions ------------------------------------------------------

_LANCZOS_NUM = (0.006061842346248906525783753964555936883222,
                0.5098416655656676188125178644804694509993,
                19.51992788247617482847860966235652136208,
                449.9445569063168119446858607650988409623,
                6955.999602515376140356310115515198987526,
                75999.29304014542649875303443598909137092,
                601859.6171681098786670226533699352302507,
                3481712.15498064590882071018964774556468,
                14605578.08768506808414169982791359218571,
                43338889.32467613834773723740590533316085,
                86363131.28813859145546927288977868422342,
                103794043.1163445451906271053616070238554,
                56906521.91347156388090791033559122686859)
_LANCZOS_DEN = (1.0, 66.0, 1925.0, 32670.0, 357423.0, 2637558.0, 13339535.0, 45995730.0,
                105258076.0, 150917976.0, 120543840.0, 39916800.0, 0.0)
_LANCZOS_G = 6.024680040776729583740234375
_IGAM_MAXITER = 2000
_IGAM_CHUNK = 25


def _lanczos_sum_expg_scaled(a):
    """Boost's Lanczos sum (``a > 0``): a rational evaluated in ``a`` up to 1, in ``1/a``
    (coefficients reversed) beyond, as SciPy's ``ratevl``."""
    small = _poly(np.minimum(a, 1.0), _LANCZOS_NUM) / _poly(np.minimum(a, 1.0), _LANCZOS_DEN)
    inv = 1 / np.maximum(a, 1.0)
    large = _poly(inv, _LANCZOS_NUM[::-1]) / _poly(inv, _LANCZOS_DEN[::-1])
    return _where(a <= 1, small, large)


def _igam_fac(a, x):
    """``x^a exp(-x) / gamma(a)`` (SciPy's ``igam_fac``): Lanczos's form where ``x`` is near
    ``a``, where the plain logarithms would lose the digits of ``a log x``."""
    plain = np.exp(a * np.log(x) - x - lgamma_f64(a))
    fac = a + _LANCZOS_G - 0.5
    res = np.sqrt(fac / math.e) / _lanczos_sum_expg_scaled(a)
    moderate = res * np.exp(a - x) * np.power(x / fac, a)
    numfac = (x - a - _LANCZOS_G + 0.5) / fac
    big = res * np.exp(a * (np.log1p(numfac) - numfac) + x * (0.5 - _LANCZOS_G) / fac)
    near = _where((a < 200) & (x < 200), moderate, big)
    return _where(np.abs(a - x) > 0.4 * np.abs(a), plain, near)


def _converge(step, state, xp):
    """Run ``state = step(state)`` (which returns ``(state, done)``) in chunks until every
    element is done or ``_IGAM_MAXITER`` steps ran: one synchronisation per chunk."""
    for _ in range(0, _IGAM_MAXITER, _IGAM_CHUNK):
        for _ in range(_IGAM_CHUNK):
            state, done = step(state)
        if bool(xp.all(done)):
            break
    return state


def _igam_series(a, x):
    """The lower function by DLMF 8.11.4: ``fac(a, x) / a * sum x^n / (a+1)...(a+n)``."""
    xp = xp_of(a)

    def step(state):
        r, c, ans, done = state
        r = r + 1
        c = xp.where(done, c, c * x / r)
        ans = xp.where(done, ans, ans + c)
        done = done | (c <= _MACHEP * ans)
        return (r, c, ans, done), done

    start = (a * 1, a * 0 + 1, a * 0 + 1, xp.zeros(a.shape, dtype=bool))
    ans = _converge(step, start, xp)[2]
    return ans * _igam_fac(a, x) / a


def _igamc_series(a, x):
    """The upper function by DLMF 8.7.3, for ``x <= 1.1``, free of the cancellation of
    ``1 - igam``."""
    xp = xp_of(a)

    def step(state):
        n, fac, total, done = state
        n = n + 1
        fac = fac * -x / n
        term = fac / (a + n)
        total = xp.where(done, total, total + term)
        done = done | (np.abs(term) <= _MACHEP * np.abs(total))
        return (n, fac, total, done), done

    start = (0.0, a * 0 + 1, a * 0, xp.zeros(a.shape, dtype=bool))
    total = _converge(step, start, xp)[2]
    logx = np.log(x)
    return -np.expm1(a * logx - lgamma_f64(1 + a)) - np.exp(a * logx - lgamma_f64(a)) * total


def _igamc_fraction(a, x):
    """The upper function by its continued fraction (DLMF 8.9.2), for ``x > 1.1``."""
    xp = xp_of(a)
    big, biginv = 4.503599627370496e15, 2.22044604925031308085e-16

    def step(state):
        c, y, z, pkm2, pkm1, qkm2, qkm1, ans, done = state
        c, y, z = c + 1, y + 1, z + 2
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        nonzero = qk != 0
        r = pk / xp.where(nonzero, qk, 1.0)
        t = xp.where(nonzero, np.abs((ans - r) / r), 1.0)
        ans = xp.where(done | ~nonzero, ans, r)
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        scale = xp.where(np.abs(pk) > big, biginv, 1.0)
        pkm2, pkm1, qkm2, qkm1 = pkm2 * scale, pkm1 * scale, qkm2 * scale, qkm1 * scale
        done = done | (t <= _MACHEP)
        return (c, y, z, pkm2, pkm1, qkm2, qkm1, ans, done), done

    y = 1 - a
    z = x + y + 1
    start = (0.0, y, z, a * 0 + 1, x + 1, x * 1, z * x, (x + 1) / (z * x),
             xp.zeros(a.shape, dtype=bool))
    ans = _converge(step, start, xp)[7]
    return ans * _igam_fac(a, x)


def _igamc_interior(a, x):
    """``Q(a, x)`` for finite ``a, x > 0`` by SciPy's choice of method."""
    upper_series = _igamc_series(a, np.minimum(x, 1.1))
    one_minus_lower = 1 - _igam_series(a, x)
    fraction = _igamc_fraction(a, np.maximum(x, 1.1))
    large_x = _where(x < a, one_minus_lower, fraction)
    tiny_x = _where(-0.4 / np.log(np.minimum(x, 0.5)) < a, one_minus_lower, upper_series)
    mid_x = _where(x * 1.1 < a, one_minus_lower, upper_series)
    return _where(x > 1.1, large_x, _where(x <= 0.5, tiny_x, mid_x))


def _igamma_edges(a, x, r, lower: bool):
    """PyTorch's (SciPy's) boundary values of igamma/igammac around the interior ``r``, with
    its order of tests (``x == 0`` gives 0 even for a NaN ``a``): the last ``where`` is the
    first test."""
    one, zero = (1.0, 0.0) if lower else (0.0, 1.0)
    r = _where(np.isnan(a) | np.isnan(x), np.nan, r)
    r = _where(np.isinf(x), one, r)
    r = _where(np.isinf(a), _where(np.isinf(x), np.nan, zero), r)
    r = _where(x == 0, zero, r)
    r = _where(a == 0, _where(x > 0, one, np.nan), r)
    return _where((x < 0) | (a < 0), np.nan, r)


def _interior_args(a, x):
    ok = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
    return _where(ok, a, 1.0), _where(ok, x, 1.0)


def igammac_f64(a, x):
    """The regularized upper incomplete gamma function ``Q(a, x)``."""
    ai, xi = _interior_args(a, x)
    return _igamma_edges(a, x, _igamc_interior(ai, xi), lower=False)


def igamma_f64(a, x):
    """The regularized lower incomplete gamma function ``P(a, x)``."""
    ai, xi = _interior_args(a, x)
    r = _where((xi > 1) & (xi > ai), 1 - _igamc_interior(ai, xi), _igam_series(ai, xi))
    return _igamma_edges(a, x, r, lower=True)


# -- orthogonal polynomials ----------------------------------------------------------------------

def _recurrence(first, step, n, active, xp):
    """``P_n`` from ``P_0 = 1``, ``P_1 = first`` and ``P_{j+1} = step(P_j, P_{j-1}, j)`` for
    every element (``n`` as float64 integers; elements not ``active`` are left to the
    caller): as many steps as the largest active ``n`` needs."""
    needed = xp.where(active, n, 0.0)
    top = int(float(needed.max())) if n.size else 0
    p = xp.ones_like(first)  # (not first * 0 + 1: NaN at an infinite x)
    q = first * 1
    for j in range(1, top):
        r = step(q, p, float(j))
        more = j < n
        p, q = xp.where(more, q, p), xp.where(more, r, q)
    r = xp.where(n == 0, 1.0, q)
    return xp.where(n < 0, 0.0, r)


def _degree(n):
    """The degree as PyTorch casts it: truncated toward zero; NaN and inf as -1."""
    return _where(np.isfinite(n), np.trunc(n), -1.0)


def _chebyshev(kind: str, shifted: bool):
    trig_from = {"t": 6, "u": 8, "v": 8, "w": 8}[kind] if not shifted else \
        {"t": 6, "u": 6, "v": 6, "w": 4}[kind]

    def kernel(x, n, dtype=None):
        xp = xp_of(x)
        n = _degree(n)
        y = 2 * x - 1 if shifted else x
        first = {"t": y, "u": 2 * y, "v": 2 * y - 1, "w": 2 * y + 1}[kind]
        at_one = (x == 1) if shifted else (y == 1)
        at_minus_one = (x == 0) if shifted else (y == -1)
        even = np.remainder(n, 2) == 0
        sign = xp.where(even, 1.0, -1.0)
        theta = np.arccos(y.clip(-1.0, 1.0))
        if kind == "t":
            ends = (1.0, sign)
            trig = np.cos(n * theta)
        elif kind == "u":
            ends = (n + 1, sign * (n + 1))
            s = np.sin(theta)
            trig = xp.where(s != 0, np.sin((n + 1) * theta) / xp.where(s != 0, s, 1.0),
                            (n + 1) * np.cos((n + 1) * theta) / y)
        elif kind == "v":
            ends = (1.0, sign * (2 * n + 1))
            c = np.cos(theta / 2)
            trig = xp.where(np.sin(theta / 2) != 1, np.cos((n + 0.5) * theta) /
                            xp.where(c != 0, c, 1.0), sign * (2 * n + 1))
        else:
            ends = (2 * n + 1, sign)
            s = np.sin(theta / 2)
            trig = xp.where(np.cos(theta / 2) != 1, np.sin((n + 0.5) * theta) /
                            xp.where(s != 0, s, 1.0), xp.where(x > (0.5 if shifted else 0),
                                                               2 * n + 1, sign))
        use_trig = (n > trig_from) & (np.abs(y) < 1)
        endpoint = at_one | at_minus_one
        r = _recurrence(first, lambda q, p, j: 2 * y * q - p, n, ~use_trig & ~endpoint, xp)
        r = xp.where(use_trig, trig, r)
        r = xp.where(at_one, ends[0], xp.where(at_minus_one, ends[1], r))
        return xp.where(n < 0, 0.0, r)

    kernel.__name__ = f"{'shifted_' if shifted else ''}chebyshev_polynomial_{kind}_f64"
    return kernel


def hermite_h_f64(x, n, dtype=None):
    """Physicists' Hermite polynomials; NaN above degree 128 (float32) or 512, as PyTorch."""
    xp = xp_of(x)
    n = _degree(n)
    limit = 128 if dtype == np.float32 else 512
    r = _recurrence(2 * x, lambda q, p, j: 2 * x * q - 2 * j * p, n, n <= limit, xp)
    return xp.where(n > limit, np.nan, r)


def hermite_he_f64(x, n, dtype=None):
    """Probabilists' Hermite polynomials; NaN above degree 128 (float32) or 512."""
    xp = xp_of(x)
    n = _degree(n)
    limit = 128 if dtype == np.float32 else 512
    r = _recurrence(x * 1, lambda q, p, j: x * q - j * p, n, n <= limit, xp)
    return xp.where(n > limit, np.nan, r)


def laguerre_l_f64(x, n, dtype=None):
    """Laguerre polynomials (1 at ``x == 0``)."""
    xp = xp_of(x)
    n = _degree(n)
    r = _recurrence(1 - x, lambda q, p, j: ((2 * j + 1 - x) * q - j * p) / (j + 1), n,
                    x != 0, xp)
    return xp.where((x == 0) & (n >= 0), 1.0, r)


def legendre_p_f64(x, n, dtype=None):
    """Legendre polynomials (+-1 at ``x == +-1``)."""
    xp = xp_of(x)
    n = _degree(n)
    endpoint = np.abs(x) == 1
    r = _recurrence(x * 1, lambda q, p, j: ((2 * j + 1) * x * q - j * p) / (j + 1), n,
                    ~endpoint, xp)
    sign = xp.where((x > 0) | (np.remainder(n, 2) == 0), 1.0, -1.0)
    return xp.where(endpoint & (n >= 0), sign, r)


# -- ops ------------------------------------------------------------------------------------------

def _in_float64_binary(kernel, pass_dtype: bool = False, name: str | None = None):
    """``kernel(a, b)`` on float64 arrays broadcast together, rounded to the operands'
    (already promoted) dtype; one operand may be a Python number. ``pass_dtype`` hands the
    kernel that dtype too (``dtype=``). Complex operands raise PyTorch's dispatch error for
    its kernel ``name``."""

    def run(a, b):
        ref = a if hasattr(a, "shape") and not isinstance(a, np.generic) else b
        xp = xp_of(ref)
        dtype = ref.dtype
        if dtype.kind == "c":
            raise _dtype.no_kernel(name or f"{kernel.__name__}_cpu", dtype)
        a64 = a.astype(np.float64) if hasattr(a, "astype") else xp.asarray(a, dtype=np.float64)
        b64 = b.astype(np.float64) if hasattr(b, "astype") else xp.asarray(b, dtype=np.float64)
        a64, b64 = xp.broadcast_arrays(a64, b64)
        shape = a64.shape
        a64, b64 = a64.reshape(shape or (1,)), b64.reshape(shape or (1,))
        with np.errstate(all="ignore"):  # overflow to inf in the cast too, as PyTorch
            r = kernel(a64, b64, dtype=dtype) if pass_dtype else kernel(a64, b64)
            return r.reshape(shape).astype(dtype, copy=False)

    return run


#: ``igamma``/``igammac``: PyTorch's kernels have no integer or bool case (the operands are
#: not floated first). (Its Bessel, Airy, polynomial, ``erfcx``, ``ndtri``, ``zeta`` kernels
#: also lack float16 and bfloat16, which Ember computes in float64 and rounds once: a
#: documented superset, ``tests/core/test_bfloat16.py``.)
_INTEGRAL = frozenset(
    d.np for d in _dtype.ALL_DTYPES if not (d.is_floating_point or d.is_complex))


def _kernel_name(name: str) -> str:
    """PyTorch's CPU kernel of op ``name`` in its dispatch errors (``bessel_j0_cpu``)."""
    return _KERNELS.get(name) or name.removeprefix("special_") + "_cpu"


_KERNELS = {"i0": "i0_vml_cpu", "special_ndtr": "erf_vml_cpu"}


def _checked_unary(op, name: str, arg: str):
    """``op`` with PyTorch's argument check: a non-tensor gets its TypeError (found when the
    attribute lookup fails: nothing on the tensor path)."""

    def checked(input):
        try:
            _ = input._data
        except AttributeError:
            if isinstance(input, Tensor):
                raise
            raise TypeError(f"{name}(): argument '{arg}' (position 1) must be Tensor, not "
                            f"{type(input).__name__}") from None
        return op(input)

    checked.__name__ = checked.__qualname__ = name
    checked.__doc__ = op.__doc__
    for attr in ("_node", "_fwd", "_unary"):
        setattr(checked, attr, getattr(op, attr))
    return checked


def _combination_error(name: str, args, params: tuple) -> TypeError:
    """PyTorch's error for a binary op called without a tensor (or with something that is
    neither a tensor nor a number)."""
    got = ", ".join(type(a).__name__ for a in args)
    x, n = params
    return TypeError(f"{name}() received an invalid combination of arguments - got ({got}), "
                     f"but expected one of:\n * (Tensor {x}, Tensor {n}, *, Tensor out = None)\n"
                     f" * (Number {'self' if x == 'input' else x}, Tensor {n}, *, Tensor out = "
                     f"None)\n * (Tensor {x}, Number {n}, *, Tensor out = None)\n")


_F32_F64 = frozenset((_dtype.float32.np, _dtype.float64.np))


def _checked_binary(op, name: str, missing: frozenset, params=("input", "other"),
                    tensors_only: bool = False):
    """``op(input, other)`` with PyTorch's argument checks and its dispatch error for a
    result dtype in ``missing`` (asked only off the float32/float64 tensor fast path).
    ``tensors_only``: both operands must be tensors (``igamma``'s signature)."""
    import numbers

    kernel = _kernel_name(name)

    def checked(input, other):
        if (input.__class__ is Tensor and other.__class__ is Tensor
                and input._data.dtype in _F32_F64 and other._data.dtype in _F32_F64):
            return op(input, other)
        if tensors_only:
            for pos, (what, v) in enumerate(zip(params, (input, other)), 1):
                if not isinstance(v, Tensor):
                    raise TypeError(f"{name}(): argument '{what}' (position {pos}) must be "
                                    f"Tensor, not {type(v).__name__}")
        elif not (isinstance(input, Tensor) and isinstance(other, (Tensor, numbers.Number))
                  or isinstance(other, Tensor) and isinstance(input, numbers.Number)):
            raise _combination_error(name, (input, other), params)
        dt = _dtype.result_type(input, other).np
        if dt in missing:
            raise _dtype.no_kernel(kernel, dt)
        return op(input, other)

    checked.__name__ = checked.__qualname__ = name
    checked.__doc__ = op.__doc__
    for attr in ("_node", "_fwd", "_kind", "_dunder"):
        if hasattr(op, attr):
            setattr(checked, attr, getattr(op, attr))
    return checked


def _special_unary(name, kernel, backward=None, *, saves="", doc, function=False,
                   inplace=False, arg="input", fwd=None):
    """Register the unary op ``name`` computed in float64 by ``kernel``: exported as
    ``ember.<name>`` and a Tensor method only when ``function`` (PyTorch has it there).
    Complex input is PyTorch's dispatch error (``in_float64``); ``fwd`` replaces the
    kernel's float64 evaluation; ``arg`` is the argument's name in PyTorch's errors."""
    if fwd is None:
        fwd = in_float64(kernel, _kernel_name(name))
    op = unary_op(name, fwd, backward, to_float=True, saves=saves)
    op.__doc__ = doc
    op = _checked_unary(op, name, arg)
    return register(name, function=function, method=function, inplace=inplace, out=True,
                    differentiable=backward is not None)(op)


def _special_binary(name, kernel, backward=None, *, doc, function=False, inplace=False,
                    pass_dtype=False, missing=frozenset(), tensors_only=False):
    op = binary_op(name, _in_float64_binary(kernel, pass_dtype, _kernel_name(name)), backward,
                   kind="float", saves="ab" if backward is not None else "")
    op.__doc__ = doc
    op = _checked_binary(op, name, missing, tensors_only=tensors_only)
    return register(name, function=function, method=function, inplace=inplace, out=True,
                    differentiable=backward is not None)(op)


def _sign(t: Tensor) -> Tensor:
    return t.sign()


def _erfcx_bw(node, g):
    x, o = node.saved[0], node.output()
    return (g * (2 * x * o - 2 / _SQRT_PI),)


def _ndtr_bw(node, g):
    x = node.saved[0]
    return (g * ((x * x) * -0.5).exp() * (1 / _SQRT_2PI),)


def _ndtri_bw(node, g):
    o = node.output()
    return (g * ((o * o) * 0.5).exp() * _SQRT_2PI,)


def _log_ndtr_bw(node, g):
    x, o = node.saved[0], node.output()
    return (g * (-(o + x * x * 0.5)).exp() * (1 / _SQRT_2PI),)


def _i0_bw(node, g):
    return (g * special_i1(node.saved[0]),)


def _i0e_bw(node, g):
    x, o = node.saved[0], node.output()
    return (g * (special_i1e(x) - _sign(x) * o),)


def _at_zero(x: Tensor, value: float, other: Tensor) -> Tensor:
    return other.masked_fill(x == 0, value)


def _nonzero(x: Tensor) -> Tensor:
    return x.masked_fill(x == 0, 1.0)


def _i1_bw(node, g):
    x, o = node.saved[0], node.output()
    return (g * _at_zero(x, 0.5, i0(x) - o / _nonzero(x)),)


def _i1e_bw(node, g):
    x, o = node.saved[0], node.output()
    return (g * _at_zero(x, 0.5, special_i0e(x) - o * (_sign(x) + 1 / _nonzero(x))),)


def _sinc_bw(node, g):
    x = node.saved[0]
    px = x * math.pi
    xs = _nonzero(x)
    d = (px * px.cos() - px.sin()) / (xs * xs * math.pi)
    return (g * _at_zero(x, 0.0, d),)


def _entr_bw(node, g):
    return (g * -(1 + node.saved[0].log()),)


def _xlog1py_bw(node, g):
    a, b = node.saved
    ga = gb = None
    if node.needs_grad(0) and isinstance(a, Tensor):
        ga = special_xlog1py(g, b)
        ga = ga.masked_fill((a == 0) & (b <= -1), 0.0)
    if node.needs_grad(1) and isinstance(b, Tensor):
        gb = g * a / (b + 1)
    return ga, gb


def _not_implemented(what: str):
    raise RuntimeError(f"the derivative for '{what}' is not implemented.")


def _zeta_bw(node, g):
    x, q = node.saved
    if node.needs_grad(0):
        _not_implemented("zeta")
    return None, g * -x * special_zeta(x + 1, q)


def _igamma_grad(node, g, sign: float, name: str):
    a, x = node.saved
    if node.needs_grad(0):
        _not_implemented(f"{name}: input")
    d = ((a - 1) * x.log() - x - _lgamma(a)).exp()
    return None, g * d * sign


def _lgamma(a):
    return a.lgamma() if isinstance(a, Tensor) else math.lgamma(a)


special_erfcx = _special_unary(
    "special_erfcx", erfcx_f64, _erfcx_bw, saves="ao",
    doc="The scaled complementary error function, ``exp(x^2) * erfc(x)``.")
special_ndtr = _special_unary(
    "special_ndtr", ndtr_f64, _ndtr_bw, saves="a",
    doc="The standard normal CDF: the area under the Gaussian density from -inf to ``x``.")
special_ndtri = _special_unary(
    "special_ndtri", ndtri_f64, _ndtri_bw, saves="o",
    doc="The inverse of ``ndtr``: the ``x`` whose standard normal CDF is ``p`` (NaN "
        "outside ``[0, 1]``).")
special_log_ndtr = _special_unary(
    "special_log_ndtr", log_ndtr_f64, _log_ndtr_bw, saves="ao",
    doc="``log(ndtr(x))``, accurate far into the lower tail.")
i0 = _special_unary("i0", i0_f64, _i0_bw, saves="a", function=True, inplace=True,
                    doc="The modified Bessel function of the first kind of order 0.")
special_i0e = _special_unary(
    "special_i0e", i0e_f64, _i0e_bw, saves="ao",
    doc="The exponentially scaled modified Bessel function of order 0, "
        "``exp(-|x|) * i0(x)``.")
special_i1 = _special_unary(
    "special_i1", i1_f64, _i1_bw, saves="ao",
    doc="The modified Bessel function of the first kind of order 1.")
special_i1e = _special_unary(
    "special_i1e", i1e_f64, _i1e_bw, saves="ao",
    doc="The exponentially scaled modified Bessel function of order 1, "
        "``exp(-|x|) * i1(x)``.")
_sinc_real = in_float64(sinc_f64, "sinc_cpu")


def _sinc_fwd(a):
    """sinc of a real array (in float64) or of a complex one (PyTorch's kernel: ``sin(pi z) /
    (pi z)`` in the complex dtype, 1 at 0)."""
    if a.dtype.kind != "c":
        return _sinc_real(a)
    if a.dtype == _dtype.CHALF_NP:
        raise _dtype.no_kernel("sinc_cpu", a.dtype)
    xp = xp_of(a)
    z = a.astype(np.complex128) * np.pi
    with np.errstate(all="ignore"):
        r = np.sin(z) / xp.where(z == 0, 1.0, z)
    return xp.where(a == 0, 1.0, r).astype(a.dtype, copy=False)


sinc = _special_unary("sinc", sinc_f64, _sinc_bw, saves="a", function=True, inplace=True,
                      fwd=_sinc_fwd,
                      doc="The normalized sinc, ``sin(pi x) / (pi x)`` (1 at 0).")
mark_holomorphic(sinc._node)  # its real backward ``g * sinc'(x)`` conjugates to the complex one
special_entr = _special_unary(
    "special_entr", entr_f64, _entr_bw, saves="a",
    doc="Elementwise entropy ``-x * log(x)`` (0 at 0, -inf for negative ``x``).")
special_xlog1py = _special_binary(
    "special_xlog1py", xlog1py_f64, _xlog1py_bw,
    doc="``input * log1p(other)``, 0 where ``input == 0`` (unless ``other`` is NaN).")
special_zeta = _special_binary(
    "special_zeta", zeta_f64, _zeta_bw,
    doc="Hurwitz's zeta function ``sum_k (other + k) ** -input``.")
igamma = _special_binary(
    "igamma", igamma_f64, lambda node, g: _igamma_grad(node, g, 1.0, "igamma"),
    function=True, inplace=True, missing=_INTEGRAL, tensors_only=True,
    doc="The regularized lower incomplete gamma function ``P(input, other)``.")
igammac = _special_binary(
    "igammac", igammac_f64, lambda node, g: _igamma_grad(node, g, -1.0, "igammac"),
    function=True, inplace=True, missing=_INTEGRAL, tensors_only=True,
    doc="The regularized upper incomplete gamma function ``Q(input, other)``.")

_NON_DIFFERENTIABLE = {
    "special_bessel_j0": (j0_f64, "The Bessel function of the first kind of order 0."),
    "special_bessel_j1": (j1_f64, "The Bessel function of the first kind of order 1."),
    "special_bessel_y0": (y0_f64, "The Bessel function of the second kind of order 0."),
    "special_bessel_y1": (y1_f64, "The Bessel function of the second kind of order 1."),
    "special_modified_bessel_i0": (i0_f64, "The modified Bessel function of the first kind "
                                           "of order 0."),
    "special_modified_bessel_i1": (i1_f64, "The modified Bessel function of the first kind "
                                           "of order 1."),
    "special_modified_bessel_k0": (k0_f64, "The modified Bessel function of the second kind "
                                           "of order 0."),
    "special_modified_bessel_k1": (k1_f64, "The modified Bessel function of the second kind "
                                           "of order 1."),
    "special_scaled_modified_bessel_k0": (k0e_f64, "``exp(x) * modified_bessel_k0(x)``."),
    "special_scaled_modified_bessel_k1": (k1e_f64, "``exp(x) * modified_bessel_k1(x)``."),
    "special_spherical_bessel_j0": (spherical_j0_f64, "The spherical Bessel function of the "
                                                      "first kind of order 0."),
    "special_airy_ai": (airy_ai_f64, "Airy's function Ai."),
}
#: the ops whose argument PyTorch's schema names ``x`` (its TypeError says so)
_X_ARG = ("special_airy_ai", "special_scaled_modified_bessel_k0",
          "special_scaled_modified_bessel_k1", "special_spherical_bessel_j0")
for _name, (_kernel, _doc) in _NON_DIFFERENTIABLE.items():
    globals()[_name] = _special_unary(_name, _kernel, doc=_doc,
                                      arg="x" if _name in _X_ARG else "input")

(special_bessel_j0, special_bessel_j1, special_bessel_y0, special_bessel_y1,
 special_modified_bessel_i0, special_modified_bessel_i1, special_modified_bessel_k0,
 special_modified_bessel_k1, special_scaled_modified_bessel_k0,
 special_scaled_modified_bessel_k1, special_spherical_bessel_j0, special_airy_ai) = (
    globals()[n] for n in _NON_DIFFERENTIABLE)


def _polynomial(name: str, kernel, doc: str):
    """Register ``special_<name>(input, n)`` (not differentiable, as in PyTorch)."""
    op = binary_op(f"special_{name}", _in_float64_binary(kernel, True, f"{name}_cpu"),
                   kind="float")
    op = _checked_binary(op, f"special_{name}", frozenset(), params=("x", "n"))

    def polynomial(input, n):
        return op(input, n)

    polynomial.__name__ = polynomial.__qualname__ = f"special_{name}"
    polynomial.__doc__ = doc
    polynomial._node = None
    return register(f"special_{name}", function=False, method=False, out=True,
                    differentiable=False)(polynomial)


#: ``torch.special``'s polynomial name -> the registered op
POLYNOMIALS = {}
for _kind in "tuvw":
    for _shifted in (False, True):
        _pname = f"{'shifted_' if _shifted else ''}chebyshev_polynomial_{_kind}"
        POLYNOMIALS[_pname] = _polynomial(
            _pname, _chebyshev(_kind, _shifted),
            f"The {'shifted ' if _shifted else ''}Chebyshev polynomial of the "
            f"{'first second third fourth'.split()['tuvw'.index(_kind)]} kind of degree "
            "``n`` at ``input``.")
POLYNOMIALS["hermite_polynomial_h"] = _polynomial(
    "hermite_polynomial_h", hermite_h_f64,
    "The physicists' Hermite polynomial of degree ``n`` at ``input``.")
POLYNOMIALS["hermite_polynomial_he"] = _polynomial(
    "hermite_polynomial_he", hermite_he_f64,
    "The probabilists' Hermite polynomial of degree ``n`` at ``input``.")
POLYNOMIALS["laguerre_polynomial_l"] = _polynomial(
    "laguerre_polynomial_l", laguerre_l_f64,
    "The Laguerre polynomial of degree ``n`` at ``input``.")
POLYNOMIALS["legendre_polynomial_p"] = _polynomial(
    "legendre_polynomial_p", legendre_p_f64,
    "The Legendre polynomial of degree ``n`` at ``input``.")


# -- polygamma and the multivariate log-gamma ----------------------------------------------------

def _polygamma_bw(node, g):
    return (g * polygamma(node.ctx + 1, node.saved[0]),)


PolygammaBackward0 = make_node_class("PolygammaBackward0", _polygamma_bw)


@register("polygamma", out=True, method=False, inplace=False)
def polygamma(n, input):
    """The ``n``-th derivative of the digamma function at ``input`` (``n >= 0``)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if not isinstance(input, Tensor):
        raise TypeError(f"polygamma(): argument 'input' (position 2) must be Tensor, not "
                        f"{type(input).__name__}")
    if n == 0:
        return input.digamma()
    d = input._data
    if d.dtype.kind == "c" or d.dtype == _dtype.CHALF_NP:  # PyTorch's kernels are real
        raise _dtype.no_kernel("trigamma" if n == 1 else "polygamma", d.dtype)
    if d.dtype not in _dtype.FLOATING_NP:
        d = d.astype(_dtype.get_default_dtype().np)
    n = int(n)
    if d.dtype == _dtype.BFLOAT16_NP:
        r = in_float64(lambda a: polygamma_f64(n, a))(d.astype(np.float32)).astype(d.dtype)
    else:
        r = in_float64(lambda a: polygamma_f64(n, a))(d)
    return result(r, input._device, PolygammaBackward0, (input,), (input,), n)


def _polygamma_method(self, n):
    return polygamma(n, self)


def _polygamma_inplace(self, n):
    from ._inplace import make_inplace

    return make_inplace(lambda t, k: polygamma(k, t), "polygamma_")(self, n)


register_method("polygamma", _polygamma_method)
register_method("polygamma_", _polygamma_inplace)


@register("mvlgamma", out=True, inplace=True)
def mvlgamma(input, p):
    """The multivariate log-gamma function of dimension ``p``:
    ``p (p - 1) / 4 * log(pi) + sum_{i < p} lgamma(input - i / 2)``."""
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
        raise TypeError(f"mvlgamma(): argument 'p' (position 2) must be int, not "
                        f"{type(p).__name__}")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = input
    if x._data.dtype not in _dtype.FLOATING_NP:
        if x._data.dtype.kind == "c" or x._data.dtype == _dtype.CHALF_NP:
            # PyTorch's check builds its offsets with arange in the input's dtype
            raise _dtype.no_kernel("arange_cpu", x._data.dtype)
        x = x.to(_dtype.get_default_dtype())
    total = x.lgamma()
    for i in range(1, int(p)):
        total = total + (x - i / 2).lgamma()
    return total + p * (p - 1) / 4 * math.log(math.pi)
